package repl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"hsdb/engine/bytesize"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

func (t *Term) modelText(m client.ModelInfo) string {
	tb := newTable()
	add := func(k, v string) { tb.add(t.st.Dim.Render(k), v) }
	add("path", m.Path)
	add("architecture", m.Arch+" ("+m.ModelType+")")
	add("hidden_size", strconv.Itoa(m.Hidden))
	layers := strconv.Itoa(m.Layers)
	if l := m.Loaded; l.Partial {
		layers += "  " + t.st.Warn.Render(fmt.Sprintf("loaded: only %s; embeddings feed layer %d directly", l, l.First))
	}
	add("num_hidden_layers", layers)
	heads := fmt.Sprintf("%d query, %d key/value, head_dim %d", m.Heads, m.KVHeads, m.HeadDim)
	if a := m.MLA; a != nil { // config.json's head_dim is not the q/k width here
		heads = fmt.Sprintf("%d (MLA): q/k %d = qk_nope_head_dim %d + qk_rope_head_dim %d, v_head_dim %d, kv_lora_rank %d", m.Heads, a.QKNope+a.QKRope, a.QKNope, a.QKRope, a.VHead, a.KVLoraRank)
		if a.QLoraRank > 0 {
			heads += fmt.Sprintf(", q_lora_rank %d", a.QLoraRank)
		}
	}
	add("heads", heads)
	add("intermediate_size", strconv.Itoa(m.Intermediate))
	if e := m.MoE; e != nil {
		moe := fmt.Sprintf("%d routed of moe_intermediate_size %d, %d per token (num_experts_per_tok)", e.RoutedExperts, e.Intermediate, e.TopK)
		if e.SharedIntermediate > 0 {
			moe += fmt.Sprintf(", shared %d wide", e.SharedIntermediate)
		}
		switch {
		case len(e.Layers) > 0 && m.Loaded.Partial:
			moe += "; of the loaded layers, in " + client.IntRuns(e.Layers)
		case len(e.Layers) > 0:
			moe += "; in layers " + client.IntRuns(e.Layers) + " (the others dense, intermediate_size)"
		case m.Loaded.Partial: // the line alone would read as experts loaded
			moe += "; none of the loaded layers routes (they are dense, intermediate_size)"
		}
		add("experts", moe)
	}
	add("vocab_size", strconv.Itoa(m.Vocab))
	add("max_position", strconv.Itoa(m.MaxPos))
	add("tied embeddings", strconv.FormatBool(m.Tied))
	add("dtype", m.DType+" (config.json)")
	w := m.Weights
	add("weights stored", dtypeCounts(w.Stored, w.Err))
	kept := dtypeCounts(w.Kept, w.Err)
	fp8 := w.QuantFormat == "" || strings.HasPrefix(w.QuantFormat, "fp8")
	if w.Converted != "" {
		kept += " (" + w.Converted + ")"
	} else if w.Dequantized > 0 && fp8 {
		kept += " (fp8 dequantized to f32)"
	} else if w.Dequantized > 0 && !w.Packed {
		kept += " (int4 dequantized to f32)"
	}
	add("weights kept as", kept)
	switch {
	case w.Dequantized > 0 && fp8:
		add("fp8", fmt.Sprintf("%s stored as fp8 and dequantized on load (`info model --fp8` lists them)", plural.Of(w.Dequantized, "tensor was", "tensors were")))
	case w.Dequantized > 0 && w.Packed:
		add("quantized", fmt.Sprintf("%s stored as %s, kept packed on the device (`info model --quantized` lists them)", plural.N(w.Dequantized, "linear weight"), w.QuantFormat))
	case w.Dequantized > 0:
		add("quantized", fmt.Sprintf("%s stored as %s, dequantized on load (`info model --quantized` lists them)", plural.N(w.Dequantized, "linear weight"), w.QuantFormat))
	}
	act := m.ActDType
	if m.W8A8 {
		act += " (--w8a8: fp8 linears quantize their input to fp8 per 128 columns)"
	}
	add("activations", act)
	if n := len(w.Unused); n > 0 {
		show := w.Unused[:min(n, 4)]
		more := ""
		if n > len(show) {
			more = fmt.Sprintf(" and %d more (`info model --unused` lists them)", n-len(show))
		}
		why := "" // as hsdb's start-up warning gives it
		if m.Skipped != "" {
			why = " (only text_config's language model is loaded, as `not loaded` below says)"
		}
		add("unused tensors", t.st.Warn.Render(fmt.Sprintf("warning: %s not used by %s: %s%s%s", plural.Of(n, "checkpoint tensor is", "checkpoint tensors are"), m.Arch, strings.Join(show, ", "), more, why)))
	}
	add("parameters", strconv.FormatInt(m.Params, 10))
	world := strconv.Itoa(m.World)
	if m.ExpertParallel { // as `info ranks` shows it: which experts each rank holds
		world += " (--ep: routed experts whole per rank, expert parallel)"
	}
	add("world size", world)
	var per []string
	for r, d := range m.Devices {
		per = append(per, fmt.Sprintf("rank %d %s %s", r, d, bytesize.Binary(m.Memory[r])))
	}
	add("devices", strings.Join(per, "; "))
	if m.DeviceWhy != "" {
		add("device choice", m.DeviceWhy)
	}
	if m.Tokenizer != "" {
		add("tokenizer", m.Tokenizer)
	}
	if b := m.TextBOS; b != nil && *b >= 0 {
		add("text BOS", fmt.Sprintf("%d (`input text` puts it before a text, as the tokenizer's reference does)", *b))
	} else if b != nil {
		add("text BOS", "none (`input text` encodes a text alone, as the tokenizer's reference does)")
	}
	if e := m.TextEOS; e != nil && *e >= 0 {
		add("text EOS", fmt.Sprintf("%d (`input text` puts it after a text, as the tokenizer's reference does)", *e))
	} else if e != nil {
		add("text EOS", "none (`input text` appends nothing to a text, as the tokenizer's reference does)")
	}
	if m.Skipped != "" {
		add("not loaded", m.Skipped)
	}
	return tb.render(t.st)
}

// dtypeCounts renders "f8e4m3 104 tensors, f32 25 tensors" (or why it
// is unknown).
func dtypeCounts(cs []client.DTypeCount, err string) string {
	if len(cs) == 0 {
		if err != "" {
			return "unknown: " + err
		}
		return "unknown"
	}
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.DType+" "+plural.N(c.Tensors, "tensor"))
	}
	return strings.Join(parts, ", ")
}

// namesText renders a list of tensor names under a heading, or none.
func namesText(names []string, heading, none string) string {
	if len(names) == 0 {
		return none
	}
	return heading + "\n  " + strings.Join(names, "\n  ")
}

// quantizedText renders `info model --quantized`: a heading naming the
// schemes, then each quantized weight with its format ("fp8 block", "int4
// group": tensor.QuantFormat with the underscore read as a space).
func quantizedText(q []client.QuantTensor) string {
	if len(q) == 0 {
		return "no weight was stored quantized"
	}
	var schemes []string
	for _, w := range q {
		if w.Scheme != "" && !slices.Contains(schemes, w.Scheme) {
			schemes = append(schemes, w.Scheme)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s stored quantized", plural.Of(len(q), "linear weight was", "linear weights were"))
	if len(schemes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(schemes, "; "))
	}
	b.WriteString(":")
	names, formats := make([]string, len(q)), make([]string, len(q))
	for i, w := range q {
		f := strings.ReplaceAll(w.Format, "_", " ")
		if f == "" {
			f = "?"
		}
		names[i], formats[i] = w.Name, f
	}
	for _, g := range groupNames(names, formats) {
		fmt.Fprintf(&b, "\n  %-10s  %s", g.tag, g.pattern)
		if g.n > 1 {
			fmt.Fprintf(&b, " (%d weights)", g.n)
		}
	}
	return b.String()
}

// groupedNamesText is namesText with routed experts' and decoder layers'
// numbered names collapsed (groupNames): `info model --fp8` on
// DeepSeek-V3 lists 58 layers × 256 experts × 3 weights otherwise.
func groupedNamesText(names []string, heading, none string) string {
	if len(names) == 0 {
		return none
	}
	var b strings.Builder
	b.WriteString(heading)
	for _, g := range groupNames(names, nil) {
		fmt.Fprintf(&b, "\n  %s", g.pattern)
		if g.n > 1 {
			fmt.Fprintf(&b, " (%d tensors)", g.n)
		}
	}
	return b.String()
}

func (t *Term) layersText(ls []client.LayerInfo) string {
	tb := newTable("layer", "site", "class", "params", "modules").alignRight(0, 3)
	for _, l := range ls {
		tb.add(strconv.Itoa(l.Layer), t.st.Site.Render(l.Site), l.Class, strconv.FormatInt(l.Params, 10), strings.Join(l.Modules, ", "))
	}
	return tb.render(t.st)
}

// workerLine renders one worker process of `info ranks`: "  worker pid
// 123 on host: at a stop at model.layers.2", its stage when the rank has
// several, and a failed one marked with its fault report.
func (t *Term) workerLine(w client.WorkerInfo, stages bool) string {
	who := "worker"
	if stages {
		who = fmt.Sprintf("stage %d worker", w.Stage)
	}
	if w.State == "failed" {
		return fmt.Sprintf("  %s pid %d on %s: %s: %s\n", who, w.PID, w.Host, t.st.Bad.Render("FAILED"), w.Reason)
	}
	state := w.State
	if w.State == "stopped by a signal" {
		state = t.st.Warn.Render(state)
	}
	if w.Site != "" {
		state += " at " + t.st.Site.Render(w.Site)
	}
	if w.State == "stopped by a signal" {
		state += " (it answers nothing until continued; Ctrl-C abandons a request to it and ends it)"
	}
	return fmt.Sprintf("  %s pid %d on %s: %s\n", who, w.PID, w.Host, state)
}

// rankInfoText renders `info ranks`: per rank, its worker processes (with
// rank workers), the split weights outside
// the decoder layers, then each run of layers split alike with its split
// weights (names relative to the layer) and where its experts are.
func (t *Term) rankInfoText(rs []client.RankInfo) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "rank %d  %s  activations %s\n", r.Rank, r.Device, r.ActDType)
		for _, w := range r.Workers {
			b.WriteString(t.workerLine(w, len(r.Workers) > 1))
		}
		for _, s := range r.Shards {
			fmt.Fprintf(&b, "  %s\n", s)
		}
		for _, l := range r.Layers {
			what := fmt.Sprintf("layer %d", l.First)
			if l.Last > l.First {
				what = fmt.Sprintf("layers %d-%d (each split alike)", l.First, l.Last)
			}
			if len(l.Shards) == 0 && len(l.Experts) == 0 {
				fmt.Fprintf(&b, "  %s: no split weights\n", t.st.Site.Render(what))
				continue
			}
			fmt.Fprintf(&b, "  %s:\n", t.st.Site.Render(what))
			for _, s := range l.Shards {
				fmt.Fprintf(&b, "    %s\n", s)
			}
			for _, x := range l.Experts {
				fmt.Fprintf(&b, "    %s\n", x)
			}
		}
	}
	return b.String()
}

func (t *Term) memoryText(ms []client.MemoryInfo) string {
	tb := newTable("rank", "in use", "kv cache", "device").alignRight(0, 1, 2)
	for _, m := range ms {
		tb.add(strconv.Itoa(m.Rank), bytesize.Binary(m.InUse), bytesize.Binary(m.KVCache), m.Device)
	}
	return tb.render(t.st)
}

func (t *Term) sitesText(ss []client.SiteInfo) string {
	tb := newTable("#", "site", "class", "tensors").alignRight(0)
	for _, s := range ss {
		tb.add(strconv.Itoa(s.Index), strings.Repeat("  ", s.Depth-1)+t.st.Site.Render(s.Site), s.Class, strings.Join(s.Tensors, ", "))
	}
	return tb.render(t.st)
}

func (t *Term) treeText(nodes []client.TreeNode) string {
	var b strings.Builder
	for _, n := range nodes {
		ind := strings.Repeat("  ", n.Depth)
		name := n.Name
		if name == "" {
			name = "(root)"
		}
		fmt.Fprintf(&b, "%s%s  %s  %s\n", ind, t.st.Site.Render(name), n.Class, t.st.Dim.Render(strconv.FormatInt(n.Params, 10)+" params"))
		// Numbered children's weights (routed experts: 0.gate_proj.weight
		// ... 383.down_proj.weight) that share shape and split print as
		// one line per group, where their first one was: 1152 lines per
		// Kimi-K2 MoE layer otherwise.
		type group struct {
			name, shape, split string
			idx                []int
		}
		var order []*group
		byKey := map[string]*group{}
		for _, w := range n.Weights {
			split := "replicated"
			if w.Dim >= 0 {
				var per []string
				for r, s := range w.RankShapes {
					per = append(per, fmt.Sprintf("r%d %s", r, shape(s)))
				}
				split = fmt.Sprintf("split dim %d: %s", w.Dim, strings.Join(per, " "))
				if len(w.RankShapes) == 1 { // tp 1: how it splits, not a split
					split = fmt.Sprintf("split dim %d at tp > 1 (one rank holds it whole)", w.Dim)
				} else if r, ok := wholeOnOne(w); ok { // --ep: an expert placed whole, not split
					split = fmt.Sprintf("whole on rank %d, none on the others (expert parallel)", r)
				}
			}
			name := shortName(w.Name, n.Path)
			num, rest, numbered := strings.Cut(name, ".")
			i, err := strconv.Atoi(num)
			if !numbered || err != nil || i < 0 {
				order = append(order, &group{name: name, shape: shape(w.Shape), split: split})
				continue
			}
			key := rest + "\x00" + shape(w.Shape) + "\x00" + split
			g := byKey[key]
			if g == nil {
				g = &group{name: rest, shape: shape(w.Shape), split: split}
				byKey[key] = g
				order = append(order, g)
			}
			g.idx = append(g.idx, i)
		}
		for _, g := range order {
			name, count := g.name, ""
			switch len(g.idx) {
			case 0:
			case 1:
				name = fmt.Sprintf("%d.%s", g.idx[0], g.name)
			default:
				name, count = fmt.Sprintf("{%s}.%s", client.IntRuns(g.idx), g.name), fmt.Sprintf(" (%d weights)", len(g.idx))
			}
			fmt.Fprintf(&b, "%s  · %s %s%s  %s\n", ind, name, t.st.Shape.Render(g.shape), count, t.st.Dim.Render(g.split))
		}
	}
	return b.String()
}

// wholeOnOne reports the rank that holds all of w when every other rank
// holds none of it (a routed expert's weight under --ep), as
// (rank, true); (0, false) for a weight split over several ranks.
func wholeOnOne(w client.WeightInfo) (int, bool) {
	whole := -1
	for r, s := range w.RankShapes {
		n := 1
		for _, d := range s {
			n *= d
		}
		switch {
		case n == 0:
		case whole < 0 && slices.Equal(s, w.Shape):
			whole = r
		default:
			return 0, false
		}
	}
	return whole, whole >= 0
}

// shortName is a weight's name relative to the nearest module path
// enclosing it (gate_up_proj's weights are named under mlp).
func shortName(w, path string) string {
	for p := path; p != ""; {
		if strings.HasPrefix(w, p+".") {
			return w[len(p)+1:]
		}
		i := strings.LastIndex(p, ".")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return w
}
