package debug

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"hsdb/engine/model"
)

// RankInfo is one rank of `info ranks`: its device and activation dtype,
// and the slices of the split weights it holds (the TP plan, read from the
// module tree's model.Param ranges): Shards are those outside the decoder
// layers (embeddings, lm_head), Layers those of the decoder layers, one
// entry per run of layers split alike.
type RankInfo struct {
	Rank     int          `json:"rank"`
	Device   string       `json:"device"`
	ActDType string       `json:"activation_dtype"`
	Shards   []ShardInfo  `json:"shards"`
	Layers   []LayerShard `json:"layers"`
}

// ShardInfo is a split weight on one rank: its name (without "model."; in
// a LayerShard relative to the layer, "self_attn.o_proj.weight"), the
// dimension split, and the rank's rows or columns [Lo, Hi) of the Full
// ones the tensor has. Padded is the rank's range in the padded split
// when it runs past the tensor (vLLM pads the vocabulary to a multiple of
// 64 before splitting it: VocabParallelEmbedding); Lo == Hi then means the
// rank holds padding only.
type ShardInfo struct {
	Name   string  `json:"name"`
	Dim    int     `json:"dim"`
	Lo     int     `json:"lo"`
	Hi     int     `json:"hi"`
	Full   int     `json:"full"`
	Padded *[2]int `json:"padded,omitempty"`
}

// String renders "embed_tokens.weight dim 0 [64:101] of 101 (padded
// [64:128])".
func (si ShardInfo) String() string {
	s := fmt.Sprintf("%s dim %d [%d:%d] of %d", si.Name, si.Dim, si.Lo, si.Hi, si.Full)
	if si.Padded != nil {
		s += fmt.Sprintf(" (padded [%d:%d])", si.Padded[0], si.Padded[1])
		if si.Lo == si.Hi {
			s += ": padding only"
		}
	}
	return s
}

// LayerShard is what one rank holds of decoder layers First..Last, which
// are all split alike: the split weights of one of them (names relative to
// the layer) and, for a mixture-of-experts layer, where its routed experts
// are.
type LayerShard struct {
	First   int          `json:"first"`
	Last    int          `json:"last"`
	Shards  []ShardInfo  `json:"shards"`
	Experts []ExpertInfo `json:"experts,omitempty"`
}

// ExpertInfo is how the routed experts of one MoE block ("mlp.experts")
// sit on a rank: the experts of Total it computes (IDs, ascending), and
// whether it holds them whole (expert parallel, vLLM's
// --enable-expert-parallel: each rank a block of experts) or only rows
// [Rows[0], Rows[1]) of each expert's Inter intermediate rows
// (tensor-parallel experts, vLLM's default). No IDs: the rank holds no
// expert.
type ExpertInfo struct {
	Module string `json:"module"`
	Total  int    `json:"total"`
	IDs    []int  `json:"experts"`
	Whole  bool   `json:"whole"`
	Rows   [2]int `json:"rows"`
	Inter  int    `json:"intermediate"`
}

// String renders "mlp.experts: experts 0-3 of 8, whole (expert parallel)"
// or "mlp.experts: all 8 experts, rows [0:18] of 36 of each (tensor
// parallel)".
func (x ExpertInfo) String() string {
	all := len(x.IDs) == x.Total
	what := fmt.Sprintf("experts %s of %d", idList(x.IDs), x.Total)
	if all {
		what = fmt.Sprintf("all %d experts", x.Total)
	}
	switch {
	case len(x.IDs) == 0:
		return fmt.Sprintf("%s: no expert of %d", x.Module, x.Total)
	case x.Whole && !all:
		return fmt.Sprintf("%s: %s, whole (expert parallel)", x.Module, what)
	case x.Whole:
		return fmt.Sprintf("%s: %s, whole", x.Module, what)
	}
	return fmt.Sprintf("%s: %s, rows [%d:%d] of %d of each (tensor parallel)", x.Module, what, x.Rows[0], x.Rows[1], x.Inter)
}

// idList renders ascending ids with runs collapsed: "0-3", "0,2,5-7".
func idList(ids []int) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		} else {
			parts = append(parts, strconv.Itoa(ids[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

var (
	layerParam  = regexp.MustCompile(`^model\.layers\.(\d+)\.(.+)$`)
	expertParam = regexp.MustCompile(`^(.+\.experts)\.(\d+)\.(.+)$`)
)

// RankInfos returns `info ranks`.
func (s *Session) RankInfos() []RankInfo {
	var out []RankInfo
	for r := range s.E.World {
		out = append(out, RankInfo{Rank: r, Device: s.E.Device(r).Name(), ActDType: s.E.Device(r).ActDType().String(),
			Shards: []ShardInfo{}, Layers: []LayerShard{}})
	}
	// Outside the layers: every split parameter; inside: per layer.
	var order []int // layer indices in tree order
	byLayer := map[int][]model.Param{}
	for _, p := range s.E.Tree.Params() {
		if m := layerParam.FindStringSubmatch(p.Name); m != nil {
			i, _ := strconv.Atoi(m[1])
			if _, seen := byLayer[i]; !seen {
				order = append(order, i)
			}
			p.Name = m[2]
			byLayer[i] = append(byLayer[i], p)
			continue
		}
		if p.Dim < 0 {
			continue
		}
		p.Name = strings.TrimPrefix(p.Name, "model.")
		for r := range out {
			out[r].Shards = append(out[r].Shards, shardOf(p, r))
		}
	}
	// Layers split alike (same shards and experts on every rank) are one
	// entry.
	key := ""
	for _, i := range order {
		per := make([]LayerShard, len(out))
		var k strings.Builder
		for r := range out {
			per[r] = layerShard(byLayer[i], r)
			b, _ := json.Marshal(per[r])
			k.Write(b)
		}
		if n := len(out[0].Layers); n > 0 && k.String() == key && out[0].Layers[n-1].Last == i-1 {
			for r := range out {
				out[r].Layers[n-1].Last = i
			}
			continue
		}
		key = k.String()
		for r := range out {
			per[r].First, per[r].Last = i, i
			out[r].Layers = append(out[r].Layers, per[r])
		}
	}
	return out
}

// shardOf is rank r's slice of split parameter p.
func shardOf(p model.Param, r int) ShardInfo {
	full := p.Shape[p.Dim]
	rg := p.Ranges[r]
	si := ShardInfo{Name: p.Name, Dim: p.Dim, Full: full, Lo: rg[0], Hi: rg[1]}
	if rg[1] > full {
		si.Hi = full
		si.Lo = min(rg[0], full)
		si.Padded = &[2]int{rg[0], rg[1]}
	}
	return si
}

// layerShard is what rank r holds of one layer whose parameters (names
// relative to the layer) are ps: its split weights, and its experts
// summarised per MoE block.
func layerShard(ps []model.Param, r int) LayerShard {
	ls := LayerShard{Shards: []ShardInfo{}}
	experts := map[string]*ExpertInfo{}
	var blocks []string
	for _, p := range ps {
		m := expertParam.FindStringSubmatch(p.Name)
		if m == nil {
			if p.Dim >= 0 {
				ls.Shards = append(ls.Shards, shardOf(p, r))
			}
			continue
		}
		e, _ := strconv.Atoi(m[2])
		x := experts[m[1]]
		if x == nil {
			x = &ExpertInfo{Module: m[1], IDs: []int{}, Whole: true}
			experts[m[1]] = x
			blocks = append(blocks, m[1])
		}
		x.Total = max(x.Total, e+1)
		held := true
		if p.Dim >= 0 {
			rg := p.Ranges[r]
			held = rg[1] > rg[0]
			if held && (x.Inter == 0 || strings.HasSuffix(m[3], "gate_proj.weight")) {
				x.Rows, x.Inter = rg, p.Shape[p.Dim]
			}
			if held && (rg[0] != 0 || rg[1] != p.Shape[p.Dim]) {
				x.Whole = false
			}
		}
		if held && (len(x.IDs) == 0 || x.IDs[len(x.IDs)-1] != e) {
			x.IDs = append(x.IDs, e)
		}
	}
	for _, b := range blocks {
		x := experts[b]
		if len(x.IDs) == 0 {
			x.Whole = false
		}
		if x.Whole && x.Inter == 0 {
			x.Rows = [2]int{}
		}
		ls.Experts = append(ls.Experts, *x)
	}
	return ls
}
