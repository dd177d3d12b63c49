package repl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"hsdb/inspect/client"
)

// splitArgs splits a command's arguments on blanks. "Double-quoted" text
// is one argument with Go/JSON escapes (\n \t \r \\ \" \' \/ \b \f \a \v
// \xHH \uXXXX \UXXXXXXXX, JSON's surrogate pairs); 'single-quoted' text is
// taken as it is. Quoted and plain text next to each other join into one
// argument, as in a shell. Errors: an unterminated quote, an unknown or
// malformed escape (naming it).
func splitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			j, err := closingQuote(s, i)
			if err != nil {
				return nil, err
			}
			text, err := unescape(s[i+1 : j])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s[i:j+1], err)
			}
			cur.WriteString(text)
			in, i = true, j+1
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			in, i = true, i+j+2
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
			i++
		default:
			cur.WriteByte(c)
			in = true
			i++
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// closingQuote returns the index of the '"' that closes the one at s[i],
// skipping backslash escapes.
func closingQuote(s string, i int) (int, error) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j, nil
		}
	}
	return 0, fmt.Errorf("unterminated \" quote")
}

// splitOutside splits s at every sep outside quotes ("..." with escapes,
// '...'), so that `input text "a; b" ; ids 1,2` is two parts.
func splitOutside(s string, sep byte) ([]string, error) {
	var parts []string
	last := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			j, err := closingQuote(s, i)
			if err != nil {
				return nil, err
			}
			i = j
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' quote")
			}
			i += j + 1
		case sep:
			parts = append(parts, s[last:i])
			last = i + 1
		}
	}
	return append(parts, s[last:]), nil
}

// unescape resolves the escapes of the inside of a double-quoted string.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "\\") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) {
			return "", fmt.Errorf("a lone \\ at the end")
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'a':
			b.WriteByte('\a')
		case 'v':
			b.WriteByte('\v')
		case '\\', '"', '\'', '/':
			b.WriteByte(c)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if i+n >= len(s) {
				return "", fmt.Errorf("\\%c needs %d hex digits", c, n)
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil {
				return "", fmt.Errorf("\\%c%s: want %d hex digits", c, s[i+1:i+1+n], n)
			}
			i += n
			r := rune(v)
			if c == 'x' {
				b.WriteByte(byte(v))
				continue
			}
			if utf16.IsSurrogate(r) { // JSON writes characters past U+FFFF as \uD83D\uDE00
				if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					lo, err := strconv.ParseUint(s[i+3:i+7], 16, 32)
					if r2 := utf16.DecodeRune(r, rune(lo)); err == nil && r2 != utf8.RuneError {
						b.WriteRune(r2)
						i += 6
						continue
					}
				}
				return "", fmt.Errorf("\\u%04X is half of a surrogate pair without its other half", v)
			}
			if !utf8.ValidRune(r) {
				return "", fmt.Errorf("\\%c%s is not a Unicode character", c, s[i-n+1:i+1])
			}
			b.WriteRune(r)
		default:
			return "", fmt.Errorf("unknown escape \\%c (want \\n \\t \\r \\\\ \\\" \\uXXXX ...)", c)
		}
	}
	return b.String(), nil
}

// sliceFlags takes --rank R, --seq S, --tokens A:B and --head H (also --flag=value)
// out of args and returns the rest. Errors: an unknown flag, a flag given
// twice, a flag without its value, a bad value.
func sliceFlags(args []string) (client.Slice, []string, error) {
	sl := client.All
	var rest []string
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			rest = append(rest, a)
			continue
		}
		name, val, has := strings.Cut(a[2:], "=")
		switch name {
		case "rank", "seq", "tokens", "head":
		default:
			return sl, nil, fmt.Errorf("unknown flag --%s (want --rank, --seq or --tokens; --head for attn_probs)", name)
		}
		if seen[name] {
			return sl, nil, fmt.Errorf("--%s given twice: give it once", name)
		}
		seen[name] = true
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
			var r client.Range
			r, err = client.ParseRange(val)
			sl.Tokens = &r
		case "head":
			var h int
			h, err = strconv.Atoi(val)
			sl.Head = &h
			if err != nil {
				err = fmt.Errorf("--head %q: want an integer", val)
			}
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
	if i >= 0 && args[i] != '[' {
		if k := strings.TrimLeft(args[i:], " \t"); strings.HasPrefix(k, "[") { // `stream [0, :4]`: the index written apart
			args = args[:i] + k
		}
	}
	if i < 0 || args[i] != '[' {
		// The name ends at a space or a tab, as splitArgs splits the
		// rest: cut at spaces alone, "stream\t--rank 1" named a tensor
		// "stream\t--rank".
		name, rest = args, ""
		if j := strings.IndexAny(args, " \t"); j >= 0 {
			name, rest = args[:j], args[j+1:]
		}
		return name, "", false, rest, nil
	}
	j := strings.IndexByte(args[i:], ']')
	if j < 0 {
		return "", "", false, "", fmt.Errorf("%q: missing ']'", args)
	}
	return args[:i], args[i+1 : i+j], true, args[i+j+1:], nil
}

// unexpectedArgs refuses the words extra that command cmd does not take,
// naming them as typed and the command's usage from the command table:
// `hist: unexpected "-3" (usage: hist TENSOR [--rank R] [--seq S]
// [--tokens A:B])`.
func unexpectedArgs(cmd string, extra []string) error {
	msg := fmt.Sprintf("%s: unexpected %q", cmd, strings.Join(extra, " "))
	if c := lookup(cmd); c != nil && c.usage != "" {
		msg += " (usage: " + c.usage + ")"
	}
	return errors.New(msg)
}
