package repl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"hsdb/inspect/plural"
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
		head := fmt.Sprintf("%s stored as fp8 (e4m3 with block scales) and dequantized on load:", plural.Of(len(n), "tensor was", "tensors were"))
		none := "no tensor was stored as fp8"
		if q, err := t.c.QuantizedTensors(); err == nil && len(q) > len(n) {
			none += fmt.Sprintf(" (%s: `info model --quantized` lists them)", plural.Of(len(q)-len(n), "other quantized weight", "other quantized weights"))
		}
		t.emit("fp8", n, func() string { return groupedNamesText(n, head, none) })
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
			s := namesText(n, fmt.Sprintf("%s not used by the model:", plural.Of(len(n), "checkpoint tensor is", "checkpoint tensors are")), "every checkpoint tensor is used")
			if len(n) > 0 && m.Skipped != "" {
				// A multimodal wrapper's vision tensors: the reason is
				// that hsdb loads text_config's model alone.
				s += "\nwhy: " + m.Skipped
			}
			return s
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
	case "break", "breakpoints", "b": // gdb's `info b`
		return showBreakpoints(t)
	case "watch", "watchpoints": // gdb's `info watchpoints`: the watches only
		return showWatchpoints(t)
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
	case "captures", "capture": // design.md's `info captures`: what `capture list` shows
		return t.showCaptures()
	default:
		return infoArgsError(args)
	}
	return nil
}

// infoSubs are the words `info` takes first (aliases included).
var infoSubs = []string{"model", "layers", "ranks", "memory", "sites", "break", "breakpoints", "b", "watch", "watchpoints", "display", "frame", "stack", "batch", "edits", "inject", "faults", "captures", "capture"}

// infoArgsError says what is wrong with `info ARGS`: a known subcommand
// given what it does not take is named with that, not answered with the
// list of subcommands as if it were unknown.
func infoArgsError(args string) error {
	const all = "want one of model [--fp8|--quantized|--unused], layers, ranks, memory, sites, break, display, frame, stack, batch, edits, inject, captures"
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

// batchSeqView is one sequence of `info batch`: its number, the position
// of its first token in the step, its token count and ids, and its text
// when the model has a tokenizer.
type batchSeqView struct {
	Seq    int     `json:"seq"`
	Pos    int     `json:"pos"`
	Tokens int     `json:"tokens"`
	IDs    []int32 `json:"ids"`
	Text   *string `json:"text,omitempty"`
	// head and tail are the text of the ids a clipped line shows.
	head, tail string
}

// Ids a line of `info batch` shows of a long sequence: all of at most
// batchIDsWhole, else the first batchIDsHead and the last batchIDsTail,
// saying how many were left out (--json lists every id).
const (
	batchIDsWhole = 24
	batchIDsHead  = 16
	batchIDsTail  = 8
)

// showBatch is `info batch`: the sequences of the stopped pass's step, one
// a line, each with its token count and ids (clipped when long) and their
// text where the model has a tokenizer; with no pass stopped, the batch
// `input` set.
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
	seqs, err := t.c.StepBatch()
	if err != nil {
		return err
	}
	v := make([]batchSeqView, len(seqs))
	for i, q := range seqs {
		v[i] = batchSeqView{Seq: q.Seq, Pos: q.Pos, Tokens: len(q.IDs), IDs: q.IDs}
		if txt, err := t.piecesText(q.IDs, q.Pos > 0); err == nil {
			v[i].Text = &txt
			if len(q.IDs) > batchIDsWhole {
				v[i].head, _ = t.piecesText(q.IDs[:batchIDsHead], q.Pos > 0)
				v[i].tail, _ = t.piecesText(q.IDs[len(q.IDs)-batchIDsTail:], true)
			}
		}
	}
	// kind "step_batch": a list per sequence of the stopped step, not the
	// object `input` emits as "batch".
	t.emit("step_batch", v, func() string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %s, %s\n", stepName(s.Step), plural.N(len(v), "sequence"), plural.N(s.Tokens, "token"))
		for _, q := range v {
			b.WriteString(t.batchSeqLine(q) + "\n")
		}
		return b.String()
	})
	return nil
}

// piecesText is the text of ids; with cont, as they read after earlier
// tokens of their sequence: a tokenizer's Decode takes its first token as
// a text's first word (llama2.c drops " a"'s space after BOS), so a
// decode step's " a" would read "a". The continuation is what Decode
// gives after the first id repeated, less that id's own text (used only
// when that text is indeed its prefix; Decode of ids otherwise).
func (t *Term) piecesText(ids []int32, cont bool) (string, error) {
	txt, err := t.c.Decode(ids)
	if err != nil || !cont || len(ids) == 0 {
		return txt, err
	}
	first, err1 := t.c.Decode(ids[:1])
	both, err2 := t.c.Decode(append([]int32{ids[0]}, ids...))
	if err1 == nil && err2 == nil && strings.HasPrefix(both, first) {
		return both[len(first):], nil
	}
	return txt, nil
}

// batchSeqLine renders one sequence of `info batch`: "seq 1: 4 tokens
// [1, 400, 281, 350]  "do he up"", "at position P" in a decode step, and
// a long sequence as its first and last ids with the count left out.
func (t *Term) batchSeqLine(q batchSeqView) string {
	line := fmt.Sprintf("  seq %d: %s", q.Seq, plural.N(q.Tokens, "token"))
	if q.Pos > 0 {
		line += fmt.Sprintf(" at position %d", q.Pos)
	}
	if len(q.IDs) <= batchIDsWhole {
		line += " " + idsText(q.IDs)
		if q.Text != nil {
			line += "  " + t.st.Dim.Render(strconv.Quote(*q.Text))
		}
		return line
	}
	head, tail := idsText(q.IDs[:batchIDsHead]), idsText(q.IDs[len(q.IDs)-batchIDsTail:])
	line += fmt.Sprintf(" %s, …, %s (%s left out)", strings.TrimSuffix(head, "]"), strings.TrimPrefix(tail, "["), plural.N(len(q.IDs)-batchIDsHead-batchIDsTail, "id"))
	if q.Text != nil {
		line += "  " + t.st.Dim.Render(strconv.Quote(q.head)+" … "+strconv.Quote(q.tail))
	}
	return line
}
