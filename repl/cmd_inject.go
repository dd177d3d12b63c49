package repl

import (
	"fmt"
	"strconv"
	"strings"

	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

// injectHelp is `help inject`: the syntax, then every fault of
// client.FaultKinds with what it does and the report it imitates.
func injectHelp() string {
	var b strings.Builder
	b.WriteString("Rehearse a bug on the loaded model: inject a fault into every following run, then capture, dump and `check`/`diff` to see it named.\n")
	b.WriteString("`inject clear` removes every fault; `info inject` (or `inject` alone) lists them. While any is active, every run and stop says so and a dump's manifest records them (injected_faults; check then fails the dump). ")
	b.WriteString("`at SITE` limits a fault to a site or a module prefix (model.layers.1); --rank R to one rank; VALUE is a kind's number (finite; shift-rows' a whole number of tokens; leave it out for the default). A VALUE, --token, --channel or --rank the kind does not read is refused, not ignored. Faults on the computation (the building blocks consult them):")
	for _, k := range client.FaultKinds {
		if k.Recorded {
			continue
		}
		fmt.Fprintf(&b, " %s — %s [imitates: %s];", k.Kind, k.Does, k.Imitates)
	}
	b.WriteString(" Faults on what is recorded (layer captures):")
	for _, k := range client.FaultKinds {
		if k.Recorded {
			fmt.Fprintf(&b, " %s — %s [imitates: %s];", k.Kind, k.Does, k.Imitates)
		}
	}
	return strings.TrimSuffix(b.String(), ";") + "."
}

// parseInject reads `FAULT [VALUE] [at SITE] [--rank R] [--token T]
// [--channel C]`.
func parseInject(args string) (client.Fault, error) {
	f := client.Fault{Rank: -1}
	a := strings.Fields(args)
	if len(a) == 0 {
		return f, fmt.Errorf("inject: want FAULT [VALUE] [at SITE] [--rank R] [--token T --channel C], clear, or nothing to list")
	}
	f.Kind = a[0]
	gotValue := false
	num := func(i int, name string) (int, error) {
		if i >= len(a) {
			return 0, fmt.Errorf("inject: %s needs a value", name)
		}
		n, err := strconv.Atoi(a[i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("inject %s %q: want a non-negative integer", name, a[i])
		}
		return n, nil
	}
	for i := 1; i < len(a); i++ {
		var err error
		switch a[i] {
		case "at":
			if i+1 >= len(a) {
				return f, fmt.Errorf("inject: at needs a SITE")
			}
			i++
			f.Site = a[i]
			if !strings.HasPrefix(f.Site, "model") && f.Site != "lm_head" {
				f.Site = "model." + f.Site // model. may be left out, as in break
			}
		case "--rank":
			i++
			f.Rank, err = num(i, "--rank")
		case "--token":
			i++
			f.Token, err = num(i, "--token")
		case "--channel":
			i++
			f.Channel, err = num(i, "--channel")
		default:
			v, perr := parseValue(a[i])
			if perr != nil || gotValue {
				return f, unexpectedArgs("inject", a[i:i+1])
			}
			if v == 0 {
				// The debugger reads a VALUE of 0 as "none given" (the
				// kind's default): shift-rows 0 shifted by 1, and
				// scale-residual 0 scaled by 0.5.
				return f, fmt.Errorf("inject %s: VALUE %s: 0 stands for no VALUE (the kind's default); give a non-zero VALUE or leave it out", f.Kind, a[i])
			}
			f.Value, gotValue = v, true
		}
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

func cmdInject(t *Term, args string) error {
	switch strings.TrimSpace(args) {
	case "":
		return showFaults(t)
	case "clear":
		before, err := t.c.Faults()
		if err != nil {
			return err
		}
		if err := t.c.ClearFaults(); err != nil {
			return err
		}
		if len(before) == 0 {
			return showFaults(t)
		}
		return showFaultsAfter(t, "cleared "+plural.N(len(before), "fault"))
	}
	f, err := parseInject(args)
	if err != nil {
		return err
	}
	if err := t.c.Inject(f); err != nil {
		return err
	}
	return showFaults(t)
}

// faultText renders one fault: "skip-allreduce at model.layers.1 on rank 1".
func faultText(f client.Fault) string {
	s := f.Kind
	if f.Value != 0 {
		s += fmt.Sprintf(" %g", f.Value)
	}
	if f.Token != 0 || f.Channel != 0 {
		s += fmt.Sprintf(" (token %d, channel %d)", f.Token, f.Channel)
	}
	if f.Site != "" {
		s += " at " + f.Site
	}
	if f.Rank >= 0 {
		s += fmt.Sprintf(" on rank %d", f.Rank)
	}
	return s
}

// showFaults is `info inject`.
func showFaults(t *Term) error { return showFaultsAfter(t, "") }

// showFaultsAfter is showFaults with a line said first in text (what
// `inject clear` removed).
func showFaultsAfter(t *Term, first string) error {
	fs, err := t.c.Faults()
	if err != nil {
		return err
	}
	t.emit("faults", fs, func() string {
		if first != "" {
			first += "\n"
		}
		if len(fs) == 0 {
			return first + "no faults injected"
		}
		lines := []string{first + plural.N(len(fs), "fault") + " injected into every run:"}
		for i, f := range fs {
			lines = append(lines, fmt.Sprintf("  %d  %s", i+1, faultText(f)))
		}
		return strings.Join(lines, "\n")
	})
	return nil
}

// completeFaults completes the fault kinds (and clear) as inject's first
// word, sites after "at".
func completeFaults(t *Term, args []string, word string) []string {
	if len(args) == 0 {
		ws := []string{"clear"}
		for _, k := range client.FaultKinds {
			ws = append(ws, k.Kind)
		}
		return withSpace(ws)
	}
	if args[len(args)-1] == "at" {
		return completeSites(t, nil, word)
	}
	return nil
}
