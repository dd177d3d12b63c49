package worker

import (
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
)

func TestScratchOverhead(t *testing.T) {
	dir := "/tmp/rnd"
	seqs := make([][]int32, 4)
	for s := range seqs {
		for i := range 1024 {
			seqs[s] = append(seqs[s], int32(1+(s*7919+i*104729)%128000))
		}
	}
	local, err := engine.Open(dir, engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	remote, _ := openWorkers(t, dir, engine.Options{TP: 1}, Config{})
	for _, h := range []model.Hook{nil, model.MultiHook{noSites{}}} {
		var ns [2]time.Duration
		for k, e := range []*engine.Engine{local, remote} {
			e.Prefill(seqs, h, false)
			for range 10 {
				st := time.Now()
				e.Prefill(seqs, h, false)
				ns[k] += time.Since(st)
			}
		}
		t.Logf("hook %v: local %v remote %v", h != nil, ns[0]/10, ns[1]/10)
	}
}
