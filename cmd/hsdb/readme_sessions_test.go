package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeBlock is one example of README.md that starts with `$ hsdb ...`:
// the arguments, and either the output of a subcommand (out) or a debugger
// session (cmds, each with the output README shows for it, nil when it
// shows none).
type readmeBlock struct {
	line int
	args []string
	out  []string
	cmds []string
	want [][]string
}

// readmeBlocks reads README's indented examples that start with `$ hsdb`
// (a blank line ends one). `# …` after a session command is a comment.
func readmeBlocks(t *testing.T, text string) []readmeBlock {
	t.Helper()
	var bs []readmeBlock
	var cur *readmeBlock
	for i, l := range strings.Split(text, "\n") {
		body, ok := strings.CutPrefix(l, "    ")
		switch {
		case !ok || strings.TrimSpace(l) == "":
			cur = nil
		case strings.HasPrefix(body, "$ hsdb"):
			bs = append(bs, readmeBlock{line: i + 1, args: strings.Fields(body)[2:]})
			cur = &bs[len(bs)-1]
		case cur == nil:
		case strings.HasPrefix(body, "(hsdb) "):
			c := strings.TrimPrefix(body, "(hsdb) ")
			if k := strings.Index(c, "  #"); k >= 0 {
				c = strings.TrimSpace(c[:k])
			}
			cur.cmds = append(cur.cmds, c)
			cur.want = append(cur.want, nil)
		case len(cur.cmds) > 0:
			cur.want[len(cur.want)-1] = append(cur.want[len(cur.want)-1], body)
		default:
			cur.out = append(cur.out, body)
		}
	}
	return bs
}

var stdinLine = regexp.MustCompile(`^error: stdin:\d+: `)

// TestReadmeSessions runs every README example that starts with `$ hsdb`
// as a newcomer types it (from the repository root; /tmp/ paths in a
// session go to a temporary directory) and fails where hsdb's output
// differs from what README shows: a subcommand's whole output, and in a
// session the output of each command README shows any for (a session
// goes on after a failing command, as at the terminal). README's
// examples are hand-written; this keeps them true.
func TestReadmeSessions(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, string(b))
	if len(blocks) < 6 {
		t.Fatalf("found %d `$ hsdb` examples in README.md, want at least 6", len(blocks))
	}
	t.Chdir("../..")
	for _, bl := range blocks {
		if len(bl.cmds) == 0 {
			code, out, errs := runWithStdin(bl.args, "")
			if got := strings.TrimRight(out, "\n"); got != strings.Join(bl.out, "\n") {
				t.Errorf("README.md:%d `hsdb %s` (exit %d, %s) prints\n%s\nREADME shows\n%s", bl.line, strings.Join(bl.args, " "), code, errs, got, strings.Join(bl.out, "\n"))
			}
			continue
		}
		tmp := t.TempDir()
		in := "set errors continue\n"
		for _, c := range bl.cmds {
			in += strings.ReplaceAll(c, "/tmp/", tmp+"/") + "\n"
		}
		_, out, errs := runWithStdin(bl.args, in)
		out = strings.ReplaceAll(out, tmp+"/", "/tmp/")
		segs := strings.Split(out, "(hsdb) ")[2:] // before the first prompt: nothing; then set errors
		if len(segs) != len(bl.cmds) {
			t.Errorf("README.md:%d: %d commands, %d prompts in the output\n%s\n%s", bl.line, len(bl.cmds), len(segs), out, errs)
			continue
		}
		for i, seg := range segs {
			if bl.want[i] == nil {
				continue
			}
			lines := strings.Split(strings.TrimRight(seg, "\n"), "\n")[1:]
			for j, l := range lines {
				lines[j] = stdinLine.ReplaceAllString(l, "error: ")
			}
			if got, want := strings.Join(lines, "\n"), strings.Join(bl.want[i], "\n"); got != want {
				t.Errorf("README.md:%d `%s` prints\n%s\nREADME shows\n%s", bl.line, bl.cmds[i], got, want)
			}
		}
	}
}
