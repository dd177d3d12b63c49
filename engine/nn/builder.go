package nn

import (
	"fmt"
	"strconv"
	"strings"

	"hsdb/engine/backend"
	"hsdb/engine/model"
)

// Builder is a position in a model's module tree, as candle-nn's VarBuilder
// is a position in a checkpoint: Pp("model").Pp("layers").PpI(3) is
// "model.layers.3". Blocks are constructed from it. In tree mode (Tree) a
// construction adds modules and parameters to the tree being built; in load
// mode (Load) it finds the same modules in the session's finished tree (for
// their sites) and loads the rank's shard of each weight. A Builder is a
// small value; copies are independent positions sharing one tree.
type Builder struct {
	path string        // module path: "model.layers.3.self_attn"
	mod  *model.Module // nearest module at or above path (the root for "")
	l    *model.Loader // load mode: the loader, prefixed with path's checkpoint name
	s    *state
	// skip: in load mode, declare (sites) but load nothing (a pipeline
	// stage's end held by another stage: model.StageEnds).
	skip bool
}

type state struct {
	world, rank int
	tree        *model.Tree
}

// Tree runs build in tree mode for world ranks and returns the finished
// module tree rooted at class rootClass (HF architectures[0]). build must
// not touch the device (it receives no loader; blocks hold nil tensors).
func Tree[M any](rootClass string, world int, build func(Builder) M) *model.Tree {
	t := model.NewTree(rootClass)
	build(Builder{mod: t.Root, s: &state{world: world, tree: t}})
	return t.Finish()
}

// Load runs build in load mode: rank l.Rank's shard of every weight is
// loaded through l, and blocks take their sites from t, the tree that Tree
// built from the same build function. The first loading error (a missing or
// misshapen tensor, a module that t does not hold) is returned.
func Load[M model.RankModel](l *model.Loader, t *model.Tree, build func(Builder) M) (model.RankModel, error) {
	m := build(Builder{mod: t.Root, l: l, s: &state{world: l.World, rank: l.Rank, tree: t}})
	if err := l.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// Pp returns the position p below b ("self_attn", or "layers.3" in one step).
func (b Builder) Pp(p string) Builder {
	c := b
	if c.path == "" {
		c.path = p
	} else {
		c.path += "." + p
	}
	if c.l != nil {
		c.l = c.l.Pp(p)
	}
	return c
}

// loads reports whether b loads weights (load mode, not skipped).
func (b Builder) loads() bool { return b.l != nil && !b.skip }

// stageHolds returns b, skipped in load mode when the loader's pipeline
// stage does not hold module path (model.StageEnds.Holds).
func (b Builder) stageHolds(path string, tied bool) Builder {
	if b.l != nil && !b.l.Stage.Holds(path, tied) {
		b.skip = true
	}
	return b
}

// PpI is Pp with an integer component (a layer or expert index).
func (b Builder) PpI(i int) Builder { return b.Pp(strconv.Itoa(i)) }

// Weights returns b with its checkpoint names under prefix instead of its
// module path (a multimodal wrapper's "language_model.model" for the module
// "model"); the tree keeps the module path. It changes nothing in tree mode.
func (b Builder) Weights(prefix string) Builder {
	if b.l != nil {
		b.l = b.l.At(prefix)
	}
	return b
}

// Module declares b's path as a module of vLLM class class whose site shows
// tensors (in order), and returns the builder positioned on it. In load mode
// the module must already be in the tree with that class; otherwise the
// load fails naming the path (the tree came from another declaration).
func (b Builder) Module(class string, tensors ...string) Builder {
	c := b
	if b.l == nil {
		name := b.path
		if b.mod.Path != "" {
			name = strings.TrimPrefix(b.path, b.mod.Path+".")
		}
		c.mod = b.mod.Add(name, class, tensors...)
		return c
	}
	m := b.s.tree.Module(b.path)
	if m == nil || m.Class != class || m.Path != b.path {
		b.l.Fail(fmt.Errorf("nn: module %s (%s) is not in the model tree this rank loads into", b.path, class))
		c.mod = &model.Module{Path: b.path, Class: class, Site: &model.Site{Path: b.path, Class: class, Tensors: tensors, Layer: -1}}
		return c
	}
	c.mod = m
	return c
}

// Site returns the site of the module b is positioned on (declared with
// Module).
func (b Builder) Site() *model.Site { return b.mod.Site }

// World returns the tensor-parallel world size.
func (b Builder) World() int { return b.s.world }

// Rank returns the rank being loaded (0 in tree mode).
func (b Builder) Rank() int { return b.s.rank }

// Ranges returns f(rank) for every rank of the world: a split's per-rank
// [start, end) ranges.
func (b Builder) Ranges(f func(rank int) [2]int) [][2]int {
	out := make([][2]int, b.s.world)
	for r := range out {
		out[r] = f(r)
	}
	return out
}

// param records, in tree mode, the weight name (a full checkpoint-style
// path: "model.layers.3.self_attn.q_proj.weight") of shape shape on b's
// module, split along dim (-1: replicated) by ranges.
func (b Builder) param(name string, shape []int, dim int, ranges [][2]int) {
	if b.l == nil {
		b.mod.Params = append(b.mod.Params, model.Param{Name: name, Shape: shape, Dim: dim, Ranges: ranges})
	}
}

// linear declares and loads the linear weight "weight" [out, in] at b's
// position, as a parameter of on's module (a merged module holds weights
// named under its parent): split over rows (dim 0) or columns (dim 1) by
// ranges, or replicated (dim -1, ranges nil). In load mode it returns the
// rank's share through model.Loader.Linear, and so through the
// checkpoint's QuantScheme; in tree mode, nil.
func (b Builder) linear(on Builder, out, in, dim int, ranges [][2]int) backend.Tensor {
	if b.l == nil {
		on.mod.Params = append(on.mod.Params, model.Param{Name: b.path + ".weight", Shape: []int{out, in}, Dim: dim, Ranges: ranges, Linear: true})
		return nil
	}
	rows, cols := [2]int{0, out}, [2]int{0, in}
	switch dim {
	case 0:
		rows = ranges[b.s.rank]
	case 1:
		cols = ranges[b.s.rank]
	}
	return b.l.Linear("weight", out, in, rows, cols)
}

// Full declares (tree mode) and loads (load mode) the replicated parameter n
// of b's module ("weight" of a norm) with the given shape.
func (b Builder) Full(n string, shape ...int) backend.Tensor {
	b.param(b.path+"."+n, shape, -1, nil)
	if b.l == nil || b.skip {
		return nil
	}
	return b.l.Full(n, shape...)
}
