package debug

import (
	"hsdb/engine/model"
)

// ModelInfo is `info model`: where the model came from, its architecture
// and sizes (config.json names), parameter count, the config's dtype, the
// weights' stored and kept dtypes (with fp8 dequantization and unused
// checkpoint tensors), the activation dtype, world size and device memory
// per rank in bytes.
type ModelInfo struct {
	Path      string `json:"path"`
	Arch      string `json:"arch"`
	ModelType string `json:"model_type"`
	Hidden    int    `json:"hidden_size"`
	Layers    int    `json:"num_hidden_layers"`
	// Loaded are the decoder layers this session holds (Partial with
	// --layers A-B).
	Loaded       LayerSpan `json:"loaded_layers"`
	Heads        int       `json:"num_attention_heads"`
	KVHeads      int       `json:"num_key_value_heads"`
	HeadDim      int       `json:"head_dim"`
	Intermediate int       `json:"intermediate_size"`
	Vocab        int       `json:"vocab_size"`
	MaxPos       int       `json:"max_position_embeddings"`
	Tied         bool      `json:"tie_word_embeddings"`
	// DType is config.json's torch_dtype; Weights what the checkpoint and
	// the ranks hold.
	DType    string       `json:"dtype"`
	Weights  WeightDTypes `json:"weights"`
	ActDType string       `json:"activation_dtype"`
	Params   int64        `json:"params"`
	World    int          `json:"world_size"`
	Devices  []string     `json:"devices"`
	Memory   []int64      `json:"memory_bytes"`
	Skipped  string       `json:"skipped,omitempty"`
}

// Model returns `info model`.
func (s *Session) Model() ModelInfo {
	e, d := s.E, s.E.Dims
	mi := ModelInfo{Path: e.Path, Arch: d.Arch, ModelType: d.ModelType, Hidden: d.Hidden, Layers: d.Layers, Heads: d.Heads, KVHeads: d.KVHeads,
		HeadDim: d.HeadDim, Intermediate: d.Intermediate, Vocab: d.Vocab, MaxPos: d.MaxPos, Tied: d.Tied, DType: d.DType.String(),
		ActDType: e.Device(0).ActDType().String(), Params: e.Tree.Root.NumParams(), World: e.World, Memory: e.MemoryInUse(), Skipped: e.Skipped,
		Loaded: s.LoadedLayers(), Weights: s.weightDTypes()}
	for r := range e.World {
		mi.Devices = append(mi.Devices, e.Device(r).Name())
	}
	return mi
}

// LayerInfo is one row of `info layers`: a decoder layer's site, class,
// parameter count and its sub-module sites.
type LayerInfo struct {
	Layer   int      `json:"layer"`
	Site    string   `json:"site"`
	Class   string   `json:"class"`
	Params  int64    `json:"params"`
	Modules []string `json:"modules"`
}

// Layers returns `info layers`.
func (s *Session) Layers() []LayerInfo {
	var out []LayerInfo
	for _, st := range s.E.Tree.Sites {
		if st.Layer < 0 || st.Depth != 2 {
			continue
		}
		m := s.E.Tree.Module(st.Path)
		li := LayerInfo{Layer: st.Layer, Site: st.Path, Class: st.Class, Params: m.NumParams()}
		for _, c := range m.Children {
			li.Modules = append(li.Modules, c.Class)
		}
		out = append(out, li)
	}
	return out
}

// MemoryInfo is one row of `info memory`: a rank's device bytes in use
// (weights, KV cache and live activations) and of its KV cache.
type MemoryInfo struct {
	Rank    int   `json:"rank"`
	InUse   int64 `json:"in_use_bytes"`
	KVCache int64 `json:"kv_cache_bytes"`
}

// Memory returns `info memory`.
func (s *Session) Memory() []MemoryInfo {
	use, kv := s.E.MemoryInUse(), s.E.CacheBytes()
	out := make([]MemoryInfo, len(use))
	for r := range use {
		out[r] = MemoryInfo{Rank: r, InUse: use[r], KVCache: kv[r]}
	}
	return out
}

// SiteInfo is one row of `info sites`: a site in visit order with its
// depth, class and the tensors it shows.
type SiteInfo struct {
	Index   int      `json:"index"`
	Site    string   `json:"site"`
	Class   string   `json:"class"`
	Depth   int      `json:"depth"`
	Tensors []string `json:"tensors"`
}

// Sites returns `info sites`: every site of one step, in visit order.
func (s *Session) Sites() []SiteInfo {
	out := make([]SiteInfo, len(s.E.Tree.Sites))
	for i, st := range s.E.Tree.Sites {
		out[i] = SiteInfo{Index: st.Index, Site: st.Path, Class: st.Class, Depth: st.Depth, Tensors: st.Tensors}
	}
	return out
}

// TreeNode is one module of `tree`: depth below the shown root, name, path,
// class, parameter count (with descendants), and its own weights.
type TreeNode struct {
	Depth   int          `json:"depth"`
	Name    string       `json:"name"`
	Path    string       `json:"path"`
	Class   string       `json:"class"`
	Params  int64        `json:"params"`
	Weights []WeightInfo `json:"weights,omitempty"`
}

// WeightInfo is a weight with its full shape, how it is split (Dim -1:
// replicated) and the shape each rank holds.
type WeightInfo struct {
	Name       string  `json:"name"`
	Shape      []int   `json:"shape"`
	Dim        int     `json:"split_dim"`
	RankShapes [][]int `json:"rank_shapes"`
}

// ModuleTree returns the module tree under path ("" for the whole model), in
// call order. Error: ErrNoSite for an unknown path.
func (s *Session) ModuleTree(path string) ([]TreeNode, error) {
	root := s.E.Tree.Root
	if path != "" {
		st, err := ResolveSite(s.E.Tree, path)
		if err != nil {
			return nil, s.noSite(err)
		}
		root = s.E.Tree.Module(st.Path)
	}
	var out []TreeNode
	var walk func(m *model.Module, depth int)
	walk = func(m *model.Module, depth int) {
		n := TreeNode{Depth: depth, Name: m.Name, Path: m.Path, Class: m.Class, Params: m.NumParams()}
		for _, p := range m.Params {
			w := WeightInfo{Name: p.Name, Shape: p.Shape, Dim: p.Dim}
			for r := range s.E.World {
				w.RankShapes = append(w.RankShapes, p.RankShape(r))
			}
			n.Weights = append(n.Weights, w)
		}
		out = append(out, n)
		for _, c := range m.Children {
			walk(c, depth+1)
		}
	}
	walk(root, 0)
	return out, nil
}
