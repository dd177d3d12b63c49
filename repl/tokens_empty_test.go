package repl

import "testing"

// TestSliceFlagsEmptyTokens: `print stream --tokens=` selected the batch's
// first row (client.ParseRange read the empty value as row 0) instead of
// refusing a flag given no value.
func TestSliceFlagsEmptyTokens(t *testing.T) {
	for _, args := range [][]string{{"--tokens="}, {"--tokens", ""}} {
		sl, rest, err := sliceFlags(args)
		if err == nil {
			t.Fatalf("sliceFlags(%q) = %+v (tokens %+v), %q, nil; want an error", args, sl, sl.Tokens, rest)
		}
	}
}
