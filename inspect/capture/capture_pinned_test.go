package capture

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"hsdb/engine"
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// asyncCPU is a CPU rank's device with model.AsyncHoster as a GPU has it,
// made strict: a copy snapshots the tensor when it is queued (the stream
// order) but lands in the pinned buffer only at its event's Wait, and a
// new buffer is filled with 0xA5, so anything read before the wait, or
// after the buffer went back to the pool and was reused, is wrong bytes.
type asyncCPU struct {
	backend.Device
	st *pinStats
}

type pinStats struct {
	allocs, frees, copies atomic.Int64
}

type fakePinned struct {
	b  []byte
	st *pinStats
	mu sync.Mutex
	ok bool
}

func (f *fakePinned) Bytes() []byte { return f.b }
func (f *fakePinned) Free() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ok {
		f.ok = false
		f.st.frees.Add(1)
	}
	return nil
}

type fakeEvent struct {
	once sync.Once
	land func()
}

func (e *fakeEvent) Wait() error { e.once.Do(e.land); return nil }

func (d asyncCPU) AllocPinned(n int64) (backend.PinnedBuffer, error) {
	d.st.allocs.Add(1)
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xA5
	}
	return &fakePinned{b: b, st: d.st, ok: true}, nil
}

func (d asyncCPU) CopyRowsAsync(t backend.Tensor, r0, r1 int, dst backend.PinnedBuffer, off int64) (backend.CopyEvent, error) {
	cols := 1
	for _, s := range t.Shape()[1:] {
		cols *= s
	}
	h := d.ToHost(t, r0, r1, 0, cols) // the CPU computes in f32: t's own bytes
	if off+int64(len(h.Data)) > int64(len(dst.Bytes())) {
		return nil, fmt.Errorf("copy of %d bytes at %d into %d", len(h.Data), off, len(dst.Bytes()))
	}
	d.st.copies.Add(1)
	return &fakeEvent{land: func() { copy(dst.Bytes()[off:], h.Data) }}, nil
}

// asyncHook hands the wrapped hook every rank's view with the device
// replaced by asyncCPU.
type asyncHook struct {
	h  model.Hook
	st *pinStats
}

func (a *asyncHook) Want(ev *model.Event) bool { return a.h.Want(ev) }
func (a *asyncHook) Visit(ev *model.Event, ranks []*model.RankView) error {
	vs := make([]*model.RankView, len(ranks))
	for i, v := range ranks {
		c := *v
		c.Device = asyncCPU{Device: v.Device, st: a.st}
		vs[i] = &c
	}
	return a.h.Visit(ev, vs)
}

// TestPinnedJobMatchesHF: the batch job on a device with asynchronous
// copies (asyncCPU) writes, for every one of 60 rows of the HF Llama
// fixture's sequences packed into batches of at most 20 tokens, layers 0
// and 1 equal to HF transformers' output_hidden_states[1] and [2] within
// 1e-5 of max|x|, at --tp 1 and 2; the copies went through the pinned
// buffers (at most the pool's 3, reused, all freed at the end). A job
// interrupted mid-way frees them too.
func TestPinnedJobMatchesHF(t *testing.T) {
	ref, seqs, starts := hfLlamaRows(t)
	for _, tp := range []int{1, 2} {
		t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
			e, err := engine.Open("../../testdata/hf/llama", engine.Options{TP: tp})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			st := &pinStats{}
			tg := targetOf(e)
			tg.Prefill = func(s [][]int32, h model.Hook) error {
				_, err := e.Prefill(s, &asyncHook{h: h, st: st}, false)
				return err
			}
			const rows = 60
			in, err := OpenJSONL(writeHFRows(t, seqs, rows), nil, LimitsOf(e.Dims))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "o")
			res, err := RunCaptureJob(context.Background(), tg, in, JobOptions{Layers: []int{0, 1}, Out: out, MaxBatchTokens: 20, Writers: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(dumpSeqs(t, res, out)) != rows {
				t.Fatalf("manifest lists %d sequences, want %d", len(dumpSeqs(t, res, out)), rows)
			}
			checkRowsHF(t, ref, seqs, starts, out, dumpSeqs(t, res, out))
			// Writers 1: min(1+2, 8) = 3 buffers at most, each pass's two
			// layers copied into one.
			if a, c := st.allocs.Load(), st.copies.Load(); a < 1 || a > 3 || c < 2*int64(rows)/6 {
				t.Errorf("%d pinned buffers, %d asynchronous copies; want 1 to 3 buffers, a copy per layer per pass", a, c)
			}
			if st.frees.Load() != st.allocs.Load() {
				t.Errorf("%d pinned buffers freed of %d", st.frees.Load(), st.allocs.Load())
			}

			// Interrupted after the first batches: the buffers are freed.
			st2 := &pinStats{}
			tg.Prefill = func(s [][]int32, h model.Hook) error {
				_, err := e.Prefill(s, &asyncHook{h: h, st: st2}, false)
				return err
			}
			ctx, cancel := context.WithCancel(context.Background())
			_, err = RunCaptureJob(ctx, tg, in, JobOptions{Layers: []int{0, 1}, Out: filepath.Join(t.TempDir(), "p"), MaxBatchTokens: 20, Writers: 4,
				AfterBatch: func(done int) {
					if done >= 6 {
						cancel()
					}
				}})
			if err == nil {
				t.Fatal("interrupted job returned no error")
			}
			if st2.allocs.Load() == 0 || st2.frees.Load() != st2.allocs.Load() {
				t.Errorf("interrupted job: %d pinned buffers freed of %d", st2.frees.Load(), st2.allocs.Load())
			}
		})
	}
}
