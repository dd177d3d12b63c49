package repl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"hsdb/inspect/client"
)

// batchView is what `input` reports: the sequences with their lengths.
type batchView struct {
	Seqs    [][]int32 `json:"seqs"`
	SeqLens []int     `json:"seq_lens"`
	Tokens  int       `json:"tokens"`
	Text    []string  `json:"text,omitempty"`
	Notes   []string  `json:"notes,omitempty"` // what of the input the batch does not keep
	// set: the batch was just set; a big one is summarised (batchText).
	set bool
}

func cmdInput(t *Term, args string) error {
	var notes []string
	if args != "" {
		var seqs [][]int32
		parts, err := splitOutside(args, ';')
		if err != nil {
			return fmt.Errorf("input: %w", err)
		}
		for i, part := range parts {
			kind, rest, _ := strings.Cut(strings.TrimSpace(part), " ")
			rest = strings.TrimSpace(rest)
			switch kind {
			case "": // "a ; " or "a ;; b": a part with nothing in it
				return fmt.Errorf("input: part %d of %d (between ';') is empty: want ids, text or file in each (input ids 1,2,3 ; ids 4,5)", i+1, len(parts))
			case "ids":
				if rest == "" {
					return fmt.Errorf("input ids: want token ids, e.g. input ids 1,403,407 (sequences separated by ';': input ids 1,2 ; ids 3)")
				}
				ids, err := client.ParseIDs(rest)
				if err != nil {
					return fmt.Errorf("input: %w", err)
				}
				seqs = append(seqs, ids)
			case "text":
				a, err := splitArgs(rest)
				if err != nil {
					return fmt.Errorf("input text: %w", err)
				}
				if len(a) != 1 {
					return fmt.Errorf("input text: want one quoted text: input text \"Once upon a time\" (escapes as in Go or JSON: \\n \\t \\\" \\uXXXX)")
				}
				ids, err := t.c.Encode(a[0])
				if err != nil {
					return err
				}
				seqs = append(seqs, ids)
			case "file":
				a, err := splitArgs(rest)
				if err != nil {
					return fmt.Errorf("input file: %w", err)
				}
				if len(a) != 1 {
					return fmt.Errorf("input file: want one path")
				}
				more, n, err := t.c.ReadJSONL(a[0])
				if err != nil {
					return err
				}
				seqs = append(seqs, more...)
				notes = append(notes, n...)
			default:
				return fmt.Errorf("input: %q: want ids, text or file (input ids 1,2,3 ; ids 4,5)", kind)
			}
		}
		if err := t.c.SetBatch(seqs); err != nil {
			return err
		}
		if s, err := t.c.Stopped(); err == nil && s != nil {
			notes = append(notes, fmt.Sprintf("the pass stopped at %s in %s keeps its own batch (`info batch` lists it); this one is for the next `run`", s.Site, stepName(s.Step)))
		}
	}
	b, err := t.c.Batch()
	if err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("input: no batch yet: input ids 1,2,3 ; ids 4,5")
	}
	v := batchView{Seqs: b, Notes: notes, set: args != ""}
	for _, q := range b {
		v.SeqLens = append(v.SeqLens, len(q))
		v.Tokens += len(q)
		if text, err := t.c.Decode(q); err == nil {
			v.Text = append(v.Text, text)
		}
	}
	t.emit("batch", v, func() string { return t.batchText(v) })
	return nil
}

func cmdRun(t *Term, _ string) error {
	return t.outcome(t.c.Run())
}

func cmdContinue(t *Term, _ string) error { return t.outcome(t.c.Continue()) }
func cmdStep(t *Term, _ string) error     { return t.outcome(t.c.Step()) }
func cmdNext(t *Term, _ string) error     { return t.outcome(t.c.Next()) }
func cmdFinish(t *Term, _ string) error   { return t.outcome(t.c.Finish()) }

func cmdUntil(t *Term, args string) error {
	if args == "" {
		return fmt.Errorf("until: which site? until layers.3")
	}
	return t.outcome(t.c.Until(args))
}

func cmdGen(t *Term, args string) error {
	n, err := strconv.Atoi(strings.TrimSpace(args))
	if err != nil {
		return fmt.Errorf("gen: want a number of decode steps: gen 8")
	}
	return t.outcome(t.c.Gen(n))
}

// outcome prints the result of a command that ran the model: the stop and
// the displays, or the end of the job.
func (t *Term) outcome(o *client.Outcome, err error) error {
	if err != nil {
		return err
	}
	if o == nil {
		return nil
	}
	if o.Stop != nil {
		t.emit("stop", o.Stop, func() string { return t.stopText(o.Stop) })
		t.showDisplays()
		return nil
	}
	t.emit("done", o.Done, func() string { return t.doneText(o.Done) })
	return nil
}

// showDisplays prints every display at a stop. A display whose tensor the
// site does not show is skipped (sites differ in what they show); any
// other error is printed and the others go on.
func (t *Term) showDisplays() {
	for _, d := range t.displays {
		err := t.printExpr(d.Expr, fmt.Sprintf("display %d: ", d.ID))
		if errors.Is(err, client.ErrNoTensor) {
			continue
		}
		if err != nil {
			t.PrintError(fmt.Errorf("display %d (%s): %w", d.ID, d.Expr, err))
		}
	}
}
