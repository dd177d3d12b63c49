package repl

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"hsdb/inspect/client"
)

// completer completes the word under the cursor for readline: command
// names first, then what the command's completer offers.
type completer struct{ t *Term }

// Do implements readline.AutoCompleter: it returns the suffixes that
// complete the current word and the word's length in runes.
func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	word, cands := c.t.candidates(string(line[:pos]))
	var out [][]rune
	for _, cand := range cands {
		if strings.HasPrefix(cand, word) {
			out = append(out, []rune(cand[len(word):]))
		}
	}
	return out, len([]rune(word))
}

// candidates returns the word being typed at the end of text and every
// completion the command line offers for it (not yet filtered by prefix).
func (t *Term) candidates(text string) (string, []string) {
	words := strings.Fields(text)
	word := ""
	if len(words) > 0 && !strings.HasSuffix(text, " ") {
		word = words[len(words)-1]
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return word, withSpace(completeCommands(t, nil, word))
	}
	c := lookup(words[0])
	if c == nil || c.complete == nil {
		return word, nil
	}
	return word, c.complete(t, words[1:], word)
}

func withSpace(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x + " "
	}
	return out
}

func completeCommands(*Term, []string, string) []string {
	var out []string
	for _, c := range commands {
		out = append(out, c.aliases...)
	}
	sort.Strings(out)
	return out
}

func words(ws ...string) func(*Term, []string, string) []string {
	return func(_ *Term, args []string, _ string) []string {
		if len(args) > 0 {
			return nil
		}
		return withSpace(ws)
	}
}

// completeSites offers the site paths one component deeper than the word
// typed (without "model."), so layers.<TAB> lists the layers and
// layers.3.<TAB> the modules of layer 3.
func completeSites(t *Term, args []string, word string) []string {
	if len(args) > 0 {
		return nil
	}
	depth := strings.Count(word, ".")
	seen := map[string]bool{}
	var out []string
	sites, err := t.c.Sites()
	if err != nil {
		return nil
	}
	for _, s := range sites {
		p := strings.TrimPrefix(s.Site, "model.")
		parts := strings.Split(p, ".")
		if len(parts) <= depth {
			continue
		}
		c := strings.Join(parts[:depth+1], ".")
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// completeTensors offers the tensors of the current stop, or every tensor
// name the model shows when not stopped, and the slice flags.
func completeTensors(t *Term, args []string, word string) []string {
	if strings.HasPrefix(word, "-") {
		return withSpace([]string{"--rank", "--seq", "--tokens"})
	}
	if len(args) > 0 {
		return nil
	}
	st, err := t.c.Stopped()
	if err != nil {
		return nil
	}
	if st != nil {
		return st.Tensors
	}
	sites, err := t.c.Sites()
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range sites {
		for _, n := range s.Tensors {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

func completeOptions(t *Term, args []string, word string) []string {
	if len(args) == 0 {
		return withSpace(optionNames())
	}
	if args[0] == "var" { // set var TENSOR...
		return completeTensors(t, args[1:], word)
	}
	if len(args) == 1 {
		if o := findOption(args[0]); o != nil && strings.Contains(o.values, "|") {
			return withSpace(strings.Split(o.values, "|"))
		}
	}
	return nil
}

func completeInput(t *Term, args []string, word string) []string {
	if len(args) == 0 {
		return withSpace([]string{"ids", "text", "file"})
	}
	if args[len(args)-1] == "file" {
		return completeFiles(t, nil, word)
	}
	return nil
}

// completeFiles offers paths that extend the word; directories end in /.
func completeFiles(_ *Term, args []string, word string) []string {
	if len(args) > 0 {
		return nil
	}
	matches, _ := filepath.Glob(word + "*")
	var out []string
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			out = append(out, m+"/")
		} else {
			out = append(out, m+" ")
		}
	}
	return out
}

// completeBreak offers sites, then `if`, then the words of a condition
// and the tensor names the model shows.
func completeBreak(t *Term, args []string, word string) []string {
	switch {
	case len(args) == 0:
		return completeSites(t, args, word)
	case len(args) == 1:
		return []string{"if "}
	case args[1] != "if":
		return nil
	}
	return append(client.CondWords(), completeTensors(t, nil, word)...)
}

// completeSetOptions is set's completer: the options, `var`, and after
// `set var` the tensors, as print offers them.
func completeSetOptions(t *Term, args []string, word string) []string {
	if len(args) == 0 {
		return append(withSpace(optionNames()), "var ")
	}
	return completeOptions(t, args, word)
}

// completeCapture offers capture's subcommands, and after `capture site`
// the sites, as break offers them.
func completeCapture(t *Term, args []string, word string) []string {
	switch {
	case len(args) == 0:
		return withSpace([]string{"layers", "site", "list", "clear"})
	case args[0] == "site" && len(args) == 1:
		return completeSites(t, nil, word)
	}
	return nil
}
