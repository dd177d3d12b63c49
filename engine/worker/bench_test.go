package worker

import (
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
)

// BenchmarkPrefillWorkers measures a prefill of 4 × 256 tokens of the
// embedded stories260K at --tp 2 with the ranks in process and in worker
// processes, with a hook that wants nothing (every site still asks the
// front), and reports the workers' time as a ratio of the in-process time
// measured in the same run:
//
//	go test ./engine/worker -run '^$' -bench PrefillWorkers -benchtime 20x
func BenchmarkPrefillWorkers(b *testing.B) {
	seqs := make([][]int32, 4)
	for s := range seqs {
		for i := range 256 {
			seqs[s] = append(seqs[s], int32(1+(s*131+i*7)%500))
		}
	}
	local, err := engine.Open("", engine.Options{TP: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	remote, _ := openWorkers(b, "", engine.Options{TP: 2}, Config{})
	var none model.MultiHook = model.MultiHook{noSites{}}
	var ns [2]int64
	for i := 0; i < b.N; i++ {
		for k, e := range []*engine.Engine{local, remote} {
			start := nanotime()
			if _, err := e.Prefill(seqs, none, false); err != nil {
				b.Fatal(err)
			}
			ns[k] += nanotime() - start
		}
	}
	b.ReportMetric(float64(ns[0])/float64(b.N)/1e6, "ms/in-process")
	b.ReportMetric(float64(ns[1])/float64(b.N)/1e6, "ms/workers")
	b.ReportMetric(float64(ns[1])/float64(ns[0]), "workers/in-process")
}

// noSites is a hook that wants no site.
type noSites struct{}

func (noSites) Want(*model.Event) bool                      { return false }
func (noSites) Visit(*model.Event, []*model.RankView) error { return nil }

func nanotime() int64 { return time.Now().UnixNano() }
