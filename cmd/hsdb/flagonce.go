package main

import (
	"flag"
	"fmt"
)

// repeatable marks a flag.Value that collects every occurrence (convert's
// --tokenizer); onceFlags leaves it alone.
type repeatable interface{ repeatable() }

func (m *multiFlag) repeatable() {}

// onceValue refuses a second, different Set of its flag: package flag keeps the last
// of `--prompt A --prompt B` and drops the first without a word, so a
// user who means two prompts (or wrote --tp twice) would get one.
type onceValue struct {
	flag.Value
	first string // the value given first
	set   bool
}

// Set takes the first value; a second that differs is refused naming
// both (the same value again changes nothing and is taken).
func (o *onceValue) Set(s string) error {
	if o.set {
		if s == o.first {
			return nil
		}
		return fmt.Errorf("given twice, first as %q: each flag takes one value", o.first)
	}
	o.first, o.set = s, true
	return o.Value.Set(s)
}

// IsBoolFlag is the wrapped value's, so that --ep needs no value still.
func (o *onceValue) IsBoolFlag() bool {
	b, ok := o.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// onceFlags makes every flag of fs except repeatable ones refuse a second
// occurrence while fs.Parse runs; the returned restore puts the flags'
// own values back (call it once parsing is done, before fs is read).
func onceFlags(fs *flag.FlagSet) (restore func()) {
	orig := map[*flag.Flag]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(repeatable); ok {
			return
		}
		orig[f] = f.Value
		f.Value = &onceValue{Value: f.Value}
	})
	return func() {
		for f, v := range orig {
			f.Value = v
		}
	}
}
