package worker

import (
	"fmt"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
)

// BenchmarkPrefillWorkers measures a prefill of 4 × 256 tokens of the
// embedded stories260K at --tp 1 and --tp 2 with the ranks in process, in
// worker processes that ask the front at every site (the protocol before
// site filters), and in worker processes that ask only where the hook may
// want a site (here none) with their collectives over direct links
// between them (peers.go) and, as before them, through the front's hub
// (Config.Hub), and reports each workers' time as a ratio of the
// in-process time measured in the same run. At --tp 1 there is no
// collective: what is left is the step's boundary (the step and done
// messages); at --tp 2 every all-reduce and all-gather also crosses
// between the workers, directly or through the front:
//
//	go test ./engine/worker -run '^$' -bench PrefillWorkers -benchtime 20x
func BenchmarkPrefillWorkers(b *testing.B) {
	seqs := make([][]int32, 4)
	for s := range seqs {
		for i := range 256 {
			seqs[s] = append(seqs[s], int32(1+(s*131+i*7)%500))
		}
	}
	for _, tp := range []int{1, 2} {
		b.Run(fmt.Sprintf("tp%d", tp), func(b *testing.B) {
			local, err := engine.Open("", engine.Options{TP: tp})
			if err != nil {
				b.Fatal(err)
			}
			defer local.Close()
			asking, _ := openWorkers(b, "", engine.Options{TP: tp}, Config{askAll: true})
			filtered, _ := openWorkers(b, "", engine.Options{TP: tp}, Config{})
			hubbed, _ := openWorkers(b, "", engine.Options{TP: tp}, Config{Hub: true})
			none := model.MultiHook{noSites{}}
			var ns [4]int64
			for i := 0; i < b.N; i++ {
				for k, e := range []*engine.Engine{local, asking, filtered, hubbed} {
					start := nanotime()
					if _, err := e.Prefill(seqs, none, false); err != nil {
						b.Fatal(err)
					}
					ns[k] += nanotime() - start
				}
			}
			b.ReportMetric(float64(ns[0])/float64(b.N)/1e6, "ms/in-process")
			b.ReportMetric(float64(ns[1])/float64(b.N)/1e6, "ms/workers-asking")
			b.ReportMetric(float64(ns[2])/float64(b.N)/1e6, "ms/workers")
			b.ReportMetric(float64(ns[1])/float64(ns[0]), "asking/in-process")
			b.ReportMetric(float64(ns[3])/float64(b.N)/1e6, "ms/workers-hub")
			b.ReportMetric(float64(ns[2])/float64(ns[0]), "workers/in-process")
			b.ReportMetric(float64(ns[3])/float64(ns[0]), "hub/in-process")
		})
	}
}

// noSites is a hook that wants no site and says so (model.SiteFilter).
type noSites struct{}

func (noSites) Want(*model.Event) bool                      { return false }
func (noSites) Visit(*model.Event, []*model.RankView) error { return nil }
func (noSites) WantSites(_ int, sites []*model.Site) []bool { return make([]bool, len(sites)) }
func (noSites) Passed(*model.Event)                         {}

func nanotime() int64 { return time.Now().UnixNano() }
