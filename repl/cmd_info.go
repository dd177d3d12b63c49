package repl

import (
	"fmt"
	"slices"
	"strings"
)

func cmdInfo(t *Term, args string) error {
	switch strings.Join(strings.Fields(args), " ") {
	case "model":
		m, err := t.c.Model()
		if err != nil {
			return err
		}
		t.emit("model", m, func() string { return t.modelText(m) })
	case "model --fp8":
		n, err := t.c.FP8Tensors()
		if err != nil {
			return err
		}
		head := fmt.Sprintf("%d tensors were stored as fp8 (e4m3 with block scales) and dequantized on load:", len(n))
		none := "no tensor was stored as fp8"
		if q, err := t.c.QuantizedTensors(); err == nil && len(q) > len(n) {
			none += fmt.Sprintf(" (%d other quantized weights: `info model --quantized` lists them)", len(q)-len(n))
		}
		t.emit("fp8", n, func() string { return namesText(n, head, none) })
	case "model --quantized":
		q, err := t.c.QuantizedTensors()
		if err != nil {
			return err
		}
		t.emit("quantized", q, func() string { return quantizedText(q) })
	case "model --unused":
		m, err := t.c.Model()
		if err != nil {
			return err
		}
		n := m.Weights.Unused
		t.emit("unused", n, func() string {
			return namesText(n, fmt.Sprintf("%d checkpoint tensors are not used by the model:", len(n)), "every checkpoint tensor is used")
		})
	case "layers":
		l, err := t.c.Layers()
		if err != nil {
			return err
		}
		t.emit("layers", l, func() string { return t.layersText(l) })
	case "ranks":
		r, err := t.c.RankInfos()
		if err != nil {
			return err
		}
		t.emit("ranks", r, func() string { return t.rankInfoText(r) })
	case "memory":
		m, err := t.c.Memory()
		if err != nil {
			return err
		}
		t.emit("memory", m, func() string { return t.memoryText(m) })
	case "sites":
		s, err := t.c.Sites()
		if err != nil {
			return err
		}
		t.emit("sites", s, func() string { return t.sitesText(s) })
	case "break", "breakpoints", "b", "watch", "watchpoints": // gdb's `info b`, `info watchpoints`
		return showBreakpoints(t)
	case "stack": // gdb's `info stack`: the backtrace
		return cmdBacktrace(t, "")
	case "display":
		return showDisplaysList(t)
	case "frame": // gdb's: the frame looked at, as `frame` shows it
		return cmdFrame(t, "", 0)
	case "batch":
		return showBatch(t)
	case "edits":
		return showEdits(t)
	case "inject", "faults":
		return showFaults(t)
	default:
		return infoArgsError(args)
	}
	return nil
}

// infoSubs are the words `info` takes first (aliases included).
var infoSubs = []string{"model", "layers", "ranks", "memory", "sites", "break", "breakpoints", "b", "watch", "watchpoints", "display", "frame", "stack", "batch", "edits", "inject", "faults"}

// infoArgsError says what is wrong with `info ARGS`: a known subcommand
// given what it does not take is named with that, not answered with the
// list of subcommands as if it were unknown.
func infoArgsError(args string) error {
	const all = "want one of model [--fp8|--quantized|--unused], layers, ranks, memory, sites, break, display, frame, batch, edits, inject"
	f := strings.Fields(args)
	switch {
	case len(f) == 0:
		return fmt.Errorf("info: %s", all)
	case f[0] == "model":
		return fmt.Errorf("info model: unexpected %q (want --fp8, --quantized or --unused)", strings.Join(f[1:], " "))
	case slices.Contains(infoSubs, f[0]):
		return fmt.Errorf("info %s: unexpected %q (it takes no arguments)", f[0], strings.Join(f[1:], " "))
	}
	return fmt.Errorf("info: %s, not %q", all, f[0])
}

func cmdTree(t *Term, args string) error {
	nodes, err := t.c.ModuleTree(strings.TrimSpace(args))
	if err != nil {
		return err
	}
	t.emit("tree", nodes, func() string { return t.treeText(nodes) })
	return nil
}

// batchSeqView is one sequence of `info batch`.
type batchSeqView struct {
	Seq    int `json:"seq"`
	Tokens int `json:"tokens"`
}

// showBatch is `info batch`: the sequences of the stopped pass's step (its
// number and token count each, one a line), or, with no pass stopped, the
// batch `input` set.
func showBatch(t *Term) error {
	s, err := t.c.Stopped()
	if err != nil {
		return err
	}
	if s == nil {
		if b, err := t.c.Batch(); err == nil && b == nil { // named for the command typed, not `input`
			return fmt.Errorf("info batch: no batch yet: input ids 1,2,3 ; ids 4,5")
		}
		return cmdInput(t, "")
	}
	v := make([]batchSeqView, len(s.SeqLens))
	for i, n := range s.SeqLens {
		v[i] = batchSeqView{Seq: s.Seqs[i], Tokens: n}
	}
	t.emit("batch", v, func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d sequences, %d tokens\n", stepName(s.Step), len(v), s.Tokens)
		for _, q := range v {
			fmt.Fprintf(&b, "  seq %d: %d tokens\n", q.Seq, q.Tokens)
		}
		return b.String()
	})
	return nil
}
