package model

import (
	"fmt"
	"sort"

	"hsdb/engine/tensor"
)

// MapSource is an in-memory WeightSource (converted llama2.c checkpoints,
// tests). Name is used in error messages.
type MapSource struct {
	Name    string
	Tensors map[string]*tensor.Tensor
}

// Meta returns the named tensor's dtype and shape.
func (m *MapSource) Meta(name string) (tensor.DType, []int, bool) {
	t, ok := m.Tensors[name]
	if !ok {
		return tensor.Invalid, nil, false
	}
	return t.DType, t.Shape, true
}

// Tensor returns the named tensor (the map's own, not a copy); an error
// naming m.Name and the tensor when the map has none of that name.
func (m *MapSource) Tensor(name string) (*tensor.Tensor, error) {
	t, ok := m.Tensors[name]
	if !ok {
		return nil, fmt.Errorf("%s: no tensor %s", m.Name, name)
	}
	return t, nil
}

// Names returns the tensor names, sorted.
func (m *MapSource) Names() []string {
	out := make([]string, 0, len(m.Tensors))
	for n := range m.Tensors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
