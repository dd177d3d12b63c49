package repl

import (
	"fmt"
	"strconv"
	"strings"

	hsdbg "hsdb/engine/debug"
)

// splitArgs splits a command's arguments on blanks, keeping "double" or
// 'single' quoted text as one argument (backslash escapes the next
// character inside double quotes).
func splitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// sliceFlags takes --rank R, --seq S and --tokens A:B (also --flag=value)
// out of args and returns the rest.
func sliceFlags(args []string) (hsdbg.Slice, []string, error) {
	sl := hsdbg.All
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			rest = append(rest, a)
			continue
		}
		name, val, has := strings.Cut(a[2:], "=")
		if !has {
			if i+1 >= len(args) {
				return sl, nil, fmt.Errorf("--%s needs a value", name)
			}
			i++
			val = args[i]
		}
		var err error
		switch name {
		case "rank":
			sl.Rank, err = nonNeg("--rank", val)
		case "seq":
			sl.Seq, err = nonNeg("--seq", val)
		case "tokens":
			var r hsdbg.Range
			r, err = hsdbg.ParseRange(val)
			sl.Tokens = &r
		default:
			err = fmt.Errorf("unknown flag --%s (want --rank, --seq or --tokens)", name)
		}
		if err != nil {
			return sl, nil, err
		}
	}
	return sl, rest, nil
}

func nonNeg(flag, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q: want a non-negative integer", flag, v)
	}
	return n, nil
}

// cutIndex splits "hidden_states[3, :8] --rank 1" into the tensor name,
// the index text ("3, :8", has=true) and the rest.
func cutIndex(args string) (name, index string, has bool, rest string, err error) {
	i := strings.IndexAny(args, "[ \t")
	if i < 0 || args[i] != '[' {
		name, rest, _ = strings.Cut(args, " ")
		return name, "", false, rest, nil
	}
	j := strings.IndexByte(args[i:], ']')
	if j < 0 {
		return "", "", false, "", fmt.Errorf("%q: missing ']'", args)
	}
	return args[:i], args[i+1 : i+j], true, args[i+j+1:], nil
}
