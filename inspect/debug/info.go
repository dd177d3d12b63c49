package debug

import (
	"slices"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/tokenizer"
	"hsdb/inspect/client"
)

// Model returns `info model`.
func (s *Session) Model() client.ModelInfo {
	e, d := s.E, s.E.Dims
	mi := client.ModelInfo{Path: e.Path, Arch: d.Arch, ModelType: d.ModelType, Hidden: d.Hidden, Layers: d.Layers, Heads: d.Heads, KVHeads: d.KVHeads,
		HeadDim: d.HeadDim, Intermediate: d.Intermediate, Vocab: d.Vocab, MaxPos: d.MaxPos, Tied: d.Tied, DType: d.DType.String(),
		ActDType: e.Device(0).ActDType().String(), Params: e.Tree.Root.NumParams(), World: e.World, ExpertParallel: e.EP, W8A8: e.W8A8, Memory: e.MemoryInUse(), Skipped: e.Skipped,
		Loaded: s.LoadedLayers(), Weights: s.weightDTypes(), DeviceWhy: e.DeviceWhy}
	if tok, err := e.Tokenizer(); err != nil {
		mi.Tokenizer = "none: " + err.Error()
	} else {
		mi.Tokenizer = tok.Name()
		bos, eos := tokenizer.TextBOS(tok), tokenizer.TextEOS(tok)
		mi.TextBOS, mi.TextEOS = &bos, &eos
	}
	for r := range e.World {
		mi.Devices = append(mi.Devices, e.Device(r).Name())
	}
	if n := d.Named; n["kv_lora_rank"] > 0 {
		mi.MLA = &client.MLAInfo{KVLoraRank: n["kv_lora_rank"], QLoraRank: n["q_lora_rank"], QKNope: n["qk_nope_head_dim"], QKRope: n["qk_rope_head_dim"], VHead: n["v_head_dim"]}
	}
	if n := d.Named; n["n_routed_experts"] > 0 {
		mi.MoE = &client.MoEInfo{RoutedExperts: n["n_routed_experts"], TopK: n["num_experts_per_tok"], Intermediate: n["moe_intermediate_size"],
			SharedIntermediate: n["moe_intermediate_size*n_shared_experts"], Layers: []int{}}
		for _, l := range s.Layers() {
			if slices.ContainsFunc(l.Modules, func(c string) bool { return strings.HasSuffix(c, "MoE") }) {
				mi.MoE.Layers = append(mi.MoE.Layers, l.Layer)
			}
		}
	}
	return mi
}

// Layers returns `info layers`.
func (s *Session) Layers() []client.LayerInfo {
	var out []client.LayerInfo
	for _, st := range s.E.Tree.Sites {
		if st.Layer < 0 || st.Depth != 2 {
			continue
		}
		m := s.E.Tree.Module(st.Path)
		li := client.LayerInfo{Layer: st.Layer, Site: st.Path, Class: st.Class, Params: m.NumParams()}
		for _, c := range m.Children {
			li.Modules = append(li.Modules, c.Class)
		}
		out = append(out, li)
	}
	return out
}

// Memory returns `info memory`.
func (s *Session) Memory() []client.MemoryInfo {
	use, kv := s.E.MemoryInUse(), s.E.CacheBytes()
	out := make([]client.MemoryInfo, len(use))
	for r := range use {
		out[r] = client.MemoryInfo{Rank: r, InUse: use[r], KVCache: kv[r], Device: s.E.Device(r).Name()}
	}
	return out
}

// Sites returns `info sites`: every site of one step, in visit order.
func (s *Session) Sites() []client.SiteInfo {
	out := make([]client.SiteInfo, len(s.E.Tree.Sites))
	for i, st := range s.E.Tree.Sites {
		out[i] = client.SiteInfo{Index: st.Index, Site: st.Path, Class: st.Class, Depth: st.Depth, Tensors: st.Tensors}
	}
	return out
}

// ModuleTree returns the module tree under path ("" for the whole model), in
// call order. Error: ErrNoSite for an unknown path.
func (s *Session) ModuleTree(path string) ([]client.TreeNode, error) {
	root := s.E.Tree.Root
	if path != "" {
		st, err := ResolveSite(s.E.Tree, path)
		if err != nil {
			return nil, s.noSite(err)
		}
		root = s.E.Tree.Module(st.Path)
	}
	var out []client.TreeNode
	var walk func(m *model.Module, depth int)
	walk = func(m *model.Module, depth int) {
		n := client.TreeNode{Depth: depth, Name: m.Name, Path: m.Path, Class: m.Class, Params: m.NumParams()}
		for _, p := range m.Params {
			w := client.WeightInfo{Name: p.Name, Shape: p.Shape, Dim: p.Dim}
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
