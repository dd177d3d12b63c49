package capture

import (
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
)

// targetOf wraps an engine as cmd/hsdb does.
func targetOf(e *engine.Engine) *Target {
	return &Target{Dims: e.Dims, Tree: e.Tree, Info: infoOf(e),
		Prefill: func(s [][]int32, h model.Hook) error { _, err := e.Prefill(s, h, false); return err }}
}

func infoOf(e *engine.Engine) ModelInfo {
	return ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name())
}

// dumpSeqs returns the sequences of the dump a job wrote to out, read
// from its manifest.json (a job's Finish returns the manifest without
// them); it fails the test when their count is not the job's Summary.
func dumpSeqs(t testing.TB, res *JobResult, out string) []SeqRecord {
	t.Helper()
	m, err := ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || res.Manifest == nil || len(m.Sequences) != res.Manifest.Summary.Sequences {
		t.Fatalf("%s lists %d sequences, the job's summary says otherwise (%+v)", out, len(m.Sequences), res)
	}
	return m.Sequences
}
