package model

import (
	"errors"
	"strings"
	"testing"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/tensor"
)

// copier is a CPU device that says it copies uploads (as the CUDA backend
// does), to see the loader skip Detach for it.
type copier struct{ *cpu.Device }

func (copier) CopiesUploads() bool { return true }

// TestLoaderDetach: the loader passes every weight bound for a device that
// may keep it (the CPU backend, which aliases uploads, or any wrapper of
// a device that does not say otherwise) through Detach and uploads what
// Detach returns; a backend.UploadCopier gets the source's tensor as it
// is. A Detach error fails the load naming the tensor.
func TestLoaderDetach(t *testing.T) {
	w := tensor.FromF32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	src := &MapSource{Name: "m", Tensors: map[string]*tensor.Tensor{"a.weight": w}}
	for _, tc := range []struct {
		name     string
		dev      backend.Device
		detached bool
	}{
		{"cpu", cpu.New(0), true},
		{"wrapped cpu", struct{ backend.Device }{cpu.New(0)}, true},
		{"upload copier", copier{cpu.New(0)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls int
			copied := tensor.FromF32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
			l := NewLoader(src, tc.dev, 0, 1, tensor.Invalid)
			l.Detach = func(x *tensor.Tensor) (*tensor.Tensor, error) {
				calls++
				if x != w {
					t.Errorf("Detach given %p, want the source's tensor %p", x, w)
				}
				return copied, nil
			}
			got := l.Pp("a").Full("weight", 2, 3)
			if err := l.Err(); err != nil {
				t.Fatal(err)
			}
			held := got.(cpu.Tensor).Tensor
			if tc.detached && (calls != 1 || held != copied) {
				t.Errorf("Detach called %d times, device holds %p; want 1 call and Detach's copy %p", calls, held, copied)
			}
			if !tc.detached && (calls != 0 || held != w) {
				t.Errorf("Detach called %d times, device holds %p; want none and the source's tensor %p", calls, held, w)
			}
		})
	}
	l := NewLoader(src, cpu.New(0), 0, 1, tensor.Invalid)
	l.Detach = func(*tensor.Tensor) (*tensor.Tensor, error) { return nil, errors.New("checkpoint m changed on disk") }
	if l.Full("a.weight", 2, 3); l.Err() == nil || !errors.Is(l.Err(), ErrWeight) || !strings.Contains(l.Err().Error(), "tensor a.weight: checkpoint m changed on disk") {
		t.Fatalf("a failed Detach: %v, want ErrWeight naming the tensor and the cause", l.Err())
	}
}
