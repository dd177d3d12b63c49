package model

import (
	"fmt"
	"strings"

	"hsdb/engine/tensor"
)

// Module is one node of a model's module tree, as vLLM builds it: a path
// (HF/vLLM naming), the vLLM class name, its own parameters, its children in
// call order, and the site where the forward pass shows it.
type Module struct {
	Name     string // last path component: "o_proj", "3"
	Path     string // "model.layers.3.self_attn.o_proj"; "" for the root
	Class    string // vLLM class: "RowParallelLinear"
	Params   []Param
	Children []*Module
	Site     *Site // nil for the root
}

// Param is one weight of a module: the checkpoint tensor name, its full
// shape, and how the ranks split it: Dim -1 replicated, 0 split over rows
// (column-parallel outputs, vocab shards), 1 split over columns
// (row-parallel inputs). Ranges[r] is rank r's [start, end) along Dim (may
// extend past the tensor for vocab padding). Linear marks a linear layer's
// weight [out, in], which the loader reads through the checkpoint's
// QuantScheme (Loader.Linear): the weights QuantScheme.Planned applies to.
type Param struct {
	Name   string
	Shape  []int
	Dim    int
	Ranges [][2]int
	Linear bool
}

// RankShape returns the shape rank r holds.
func (p Param) RankShape(r int) []int {
	s := append([]int(nil), p.Shape...)
	if p.Dim >= 0 && r < len(p.Ranges) {
		s[p.Dim] = p.Ranges[r][1] - p.Ranges[r][0]
	}
	return s
}

// Numel returns the parameter's element count (full tensor).
func (p Param) Numel() int64 { return int64(tensor.Numel(p.Shape)) }

// Add appends a child module named name of vLLM class class and returns it.
// tensors names what its site shows.
func (m *Module) Add(name, class string, tensors ...string) *Module {
	path := name
	if m.Path != "" {
		path = m.Path + "." + name
	}
	c := &Module{Name: name, Path: path, Class: class}
	c.Site = &Site{Path: path, Class: class, Tensors: tensors, Layer: -1}
	m.Children = append(m.Children, c)
	return c
}

// Param records a weight of m: name is relative to m's path.
func (m *Module) Param(name string, shape []int, dim int, ranges [][2]int) *Module {
	full := name
	if m.Path != "" {
		full = m.Path + "." + name
	}
	m.Params = append(m.Params, Param{Name: full, Shape: shape, Dim: dim, Ranges: ranges})
	return m
}

// NumParams returns the parameter count of m and its descendants.
func (m *Module) NumParams() int64 {
	var n int64
	for _, p := range m.Params {
		n += p.Numel()
	}
	for _, c := range m.Children {
		n += c.NumParams()
	}
	return n
}

// Tree is a model's module tree with its sites in visit order.
type Tree struct {
	Root   *Module
	Sites  []*Site // in the order a forward step visits them (post-order)
	byPath map[string]*Module
}

// NewTree returns a tree whose root has the given class
// ("LlamaForCausalLM").
func NewTree(rootClass string) *Tree {
	return &Tree{Root: &Module{Class: rootClass}}
}

// Finish fixes depths, parents, layer indices and the visit order. Call it
// once, after the last Add.
func (t *Tree) Finish() *Tree {
	t.byPath = map[string]*Module{}
	var walk func(m *Module, parent *Site, depth, layer int)
	walk = func(m *Module, parent *Site, depth, layer int) {
		if m.Site != nil {
			if strings.HasPrefix(m.Path, "model.layers.") && layer < 0 {
				fmt.Sscanf(strings.TrimPrefix(m.Path, "model.layers."), "%d", &layer)
			}
			m.Site.Depth, m.Site.Parent, m.Site.Layer = depth, parent, layer
			t.byPath[m.Path] = m
		}
		var self *Site
		if m.Site != nil {
			self = m.Site
		}
		for _, c := range m.Children {
			walk(c, self, depth+1, layer)
		}
		if m.Site != nil {
			m.Site.Index = len(t.Sites)
			t.Sites = append(t.Sites, m.Site)
		}
	}
	walk(t.Root, nil, 0, -1)
	return t
}

// Module returns the module at path ("model." may be omitted), or nil.
func (t *Tree) Module(path string) *Module {
	if m, ok := t.byPath[path]; ok {
		return m
	}
	return t.byPath["model."+path]
}

// Site returns the site at path ("model." may be omitted), or nil.
func (t *Tree) Site(path string) *Site {
	if m := t.Module(path); m != nil {
		return m.Site
	}
	return nil
}

// Params returns every parameter of the tree in module order.
func (t *Tree) Params() []Param {
	var out []Param
	var walk func(m *Module)
	walk = func(m *Module) {
		out = append(out, m.Params...)
		for _, c := range m.Children {
			walk(c)
		}
	}
	walk(t.Root)
	return out
}
