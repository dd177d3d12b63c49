package debug

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"hsdb/engine/model"
	"hsdb/inspect/client"
)

var (
	layerParam  = regexp.MustCompile(`^model\.layers\.(\d+)\.(.+)$`)
	expertParam = regexp.MustCompile(`^(.+\.experts)\.(\d+)\.(.+)$`)
)

// RankInfos returns `info ranks`: each rank's device, its split weights
// and, with rank workers, each of its worker processes (pid, host, state,
// and why a failed one failed), read without waiting on any worker.
func (s *Session) RankInfos() []client.RankInfo {
	var out []client.RankInfo
	for r := range s.E.World {
		out = append(out, client.RankInfo{Rank: r, Device: s.E.Device(r).Name(), ActDType: s.E.Device(r).ActDType().String(),
			Shards: []client.ShardInfo{}, Layers: []client.LayerShard{}})
	}
	for _, w := range s.E.WorkerStates() {
		out[w.Rank].Workers = append(out[w.Rank].Workers, client.WorkerInfo{Stage: w.Stage, PID: w.PID, Host: w.Host, State: w.State, Site: w.Site, Reason: w.Reason})
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
		per := make([]client.LayerShard, len(out))
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
func shardOf(p model.Param, r int) client.ShardInfo {
	full := p.Shape[p.Dim]
	rg := p.Ranges[r]
	si := client.ShardInfo{Name: p.Name, Dim: p.Dim, Full: full, Lo: rg[0], Hi: rg[1]}
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
func layerShard(ps []model.Param, r int) client.LayerShard {
	ls := client.LayerShard{Shards: []client.ShardInfo{}}
	experts := map[string]*client.ExpertInfo{}
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
			x = &client.ExpertInfo{Module: m[1], IDs: []int{}, Whole: true}
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
