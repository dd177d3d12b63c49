package capture

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// TestNewUser_FifoInDump: a dump whose journal.jsonl or manifest.json is
// a named pipe (a hostile tarball can hold one) hung ReadManifest, and so
// `check DIR`, `dump DIR --force` and `capture --out DIR --force` (SIGTERM
// could not stop the blocked open). Each now refuses at once, naming the
// file, and the dump is left as it was.
func TestNewUser_FifoInDump(t *testing.T) {
	seqs, reps, info := smallCapture(t)
	info.Job = nil
	parent := t.TempDir()
	d := filepath.Join(parent, "d")
	if _, err := Dump(d, seqs, reps, info, DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(d, JournalName), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := ReadManifest(d)
		done <- err
		_, err = Dump(d, seqs, reps, info, DumpOptions{Force: true})
		done <- err
	}()
	for _, what := range []string{"ReadManifest", "Dump --force"} {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "journal.jsonl: not a regular file (a named pipe)") {
				t.Errorf("%s on a dump with a fifo journal: %v, want a not-a-regular-file error", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocked on the fifo", what)
		}
	}
	// Nothing was replaced: the manifest and the sequence files remain.
	if _, err := os.Stat(filepath.Join(d, ManifestName)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(d, JournalName))
	m, err := ReadManifest(d)
	if err != nil || len(m.Sequences) != len(seqs) {
		t.Fatalf("after removing the fifo: %v sequences, %v", m, err)
	}
}

// TestNewUser_CapturePartialLoad: `hsdb capture --load-layers 1-2
// --layers 2` wrote a dump labelled "HF output_hidden_states[3]" whose
// values were not the model's: with layers 1-2 loaded, layer 1 receives
// the embeddings instead of layer 0's output. The values differ from the
// full model's layer 2 (checked here, so the refusal is not hiding a
// harmless case), and capturing from such a load is refused, naming the
// flag; a load from layer 0 still captures, equal to the full model.
func TestNewUser_CapturePartialLoad(t *testing.T) {
	const dir = "../../testdata/hf/llama"
	ids := [][]int32{{1, 5, 7, 9}}
	layer := func(e *engine.Engine, l int) []float32 {
		h := &streamCopy{site: fmt.Sprintf("model.layers.%d", l)}
		if _, err := e.Prefill(ids, h, false); err != nil {
			t.Fatal(err)
		}
		if h.got == nil {
			t.Fatalf("no stream at %s", h.site)
		}
		return h.got
	}
	open := func(r *model.LayerRange) *engine.Engine {
		e, err := engine.Open(dir, engine.Options{Layers: r})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	full, from1, from0 := open(nil), open(&model.LayerRange{First: 1, Last: 2}), open(&model.LayerRange{First: 0, Last: 1})
	want, wrong, right := layer(full, 1), layer(from1, 1), layer(from0, 1)
	same := func(a, b []float32) bool {
		if len(a) != len(b) || len(a) == 0 {
			return false
		}
		for i := range a {
			if !(a[i] == b[i]) {
				return false
			}
		}
		return true
	}
	if same(want, wrong) {
		t.Fatal("layer 1 of --load-layers 1-2 equals the full model's: the premise of the refusal is wrong")
	}
	if !same(want, right) {
		t.Fatal("layer 1 of --load-layers 0-1 differs from the full model's")
	}
	c := NewCapturer(from1.Tree, from1.Dims.Layers)
	for what, err := range map[string]error{"AddLayers": c.AddLayers([]int{2}, WhatStream), "AddSite": c.AddSite("model.layers.2", "stream")} {
		if !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), "--load-layers 1-2") {
			t.Errorf("%s on a --load-layers 1-2 model: %v, want a refusal naming the flag", what, err)
		}
	}
	if err := NewCapturer(from0.Tree, from0.Dims.Layers).AddLayers([]int{0, 1}, WhatStream); err != nil {
		t.Errorf("capture from --load-layers 0-1: %v", err)
	}
}

// streamCopy is an independent hook: rank 0's stream at one site, copied
// to the host.
type streamCopy struct {
	site string
	got  []float32
}

func (h *streamCopy) Want(ev *model.Event) bool { return ev.Site.Path == h.site }

func (h *streamCopy) Visit(ev *model.Event, ranks []*model.RankView) error {
	for _, st := range ranks[0].Tensors {
		if st.Name == "stream" {
			s := st.T.Shape()
			h.got = ranks[0].Device.ToHost(st.T, 0, s[0], 0, s[1]).ToF32()
		}
	}
	return nil
}

// TestNewUser_MomentsDiffFailsClosed: two ranks' moments whose sums both
// overflowed to +Inf gave a NaN difference, and `d > worst` let the
// replica pass as equal. By hand: equal finite moments differ by 0, a
// NaN difference counts as 1 (the largest).
func TestNewUser_MomentsDiffFailsClosed(t *testing.T) {
	a := tensor.Moments{Count: 4, Sum: 2, SumSq: 4, Min: -1, Max: 2, AbsMax: 2}
	if d := momentsDiff(a, a); d != 0 {
		t.Fatalf("equal moments differ by %v, want 0", d)
	}
	inf := a
	inf.Sum, inf.SumSq = math.Inf(1), math.Inf(1)
	if d := momentsDiff(inf, inf); !(d >= 1) {
		t.Fatalf("moments with overflowed sums differ by %v, want 1 (not shown equal)", d)
	}
}

// TestNewUser_CaptureArmedMidPass: `capture layers 0,1,2` while stopped
// past layer 0 of the prefill, then `gen`, failed at dump with
// "hidden_states.0 has 1 rows for 5 tokens", which does not say why. The
// capture now names the key, the sequence, the tokens it missed and the
// cause. (Layer 1 armed before the prefill, layer 0 after it: by hand,
// sequence 0 has 4 prompt tokens layer 0 never saw.)
func TestNewUser_CaptureArmedMidPass(t *testing.T) {
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := NewCapturer(e.Tree, e.Dims.Layers)
	if err := c.AddLayers([]int{1}, WhatStream); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prefill([][]int32{{1, 5, 7, 9}, {1, 3}}, c, false); err != nil {
		t.Fatal(err)
	}
	if err := c.AddLayers([]int{0}, WhatStream); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Decode([]int32{4, 4}, c); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Result()
	if !errors.Is(err, ErrCapture) || !strings.Contains(err.Error(), "hidden_states.0: sequence 0's first 4 tokens were not recorded") {
		t.Fatalf("Result = %v, want the armed-mid-pass error naming hidden_states.0 and sequence 0", err)
	}
}

// TestNewUser_DataRowTypeErrors: a --data row of the wrong JSON type said
// "json: cannot unmarshal number 2.5 into Go struct field
// jsonlRow.input_ids of type int64"; it now names the line, the field and
// the JSON value expected.
func TestNewUser_DataRowTypeErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ row, want string }{
		{`{"input_ids": [1, 2.5, 3]}`, "d.jsonl:1: input_ids: got number 2.5, want an integer"},
		{`{"input_ids": "1,2"}`, "d.jsonl:1: input_ids: got a JSON string, want an array of integers"},
		{`[1, 2, 3]`, "d.jsonl:1: got a JSON array, want an object"},
	} {
		p := filepath.Join(dir, "d.jsonl")
		if err := os.WriteFile(p, []byte(c.row+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadJSONL(p, nil, Limits{})
		if err == nil || !strings.HasSuffix(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: %v, want %q", c.row, err, c.want)
		}
	}
}

// TestNewUser_NegativeWriters: JobOptions{Writers: -1} (hsdb capture
// --writers -1) panicked in make(chan); it now runs with the default, and
// every sequence is written.
func TestNewUser_NegativeWriters(t *testing.T) {
	e, err := engine.Open("", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	in, err := ParseIDsList("1,2,3;1,5", LimitsOf(e.Dims))
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunCaptureJob(context.Background(), targetOf(e), in, JobOptions{Layers: []int{1}, Out: filepath.Join(t.TempDir(), "o"), Writers: -1})
	if err != nil || res.Done != 2 {
		t.Fatalf("RunCaptureJob with Writers -1: %+v, %v; want 2 sequences done", res, err)
	}
}
