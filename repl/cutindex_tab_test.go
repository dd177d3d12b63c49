package repl

import (
	"bytes"
	"testing"
)

// TestSetVarTabAfterName: `set var stream<TAB>--rank 1 = 0.5` (a script
// aligned with tabs) was refused with `value "1 0.5": want one number`,
// and `print stream<TAB>--rank 1` looked for a tensor "stream\t--rank":
// cutIndex ended the name at a space only, while the words after it are
// split at any whitespace (found by FuzzSetVar as the tensor "0\t0",
// corpus entry tab_in_name). The name now ends at a tab too: tensor
// stream, --rank 1, value 0.5 assigned.
func TestSetVarTabAfterName(t *testing.T) {
	c := &setVarClient{}
	if err := New(c, &bytes.Buffer{}, Config{}).Exec("set var stream\t--rank 1 = 0.5"); err != nil {
		t.Fatal(err)
	}
	if r := c.req; r == nil || r.Tensor != "stream" || r.Slice.Rank != 1 || r.Op != "=" || r.Value != 0.5 {
		t.Fatalf("request %+v, want tensor stream, --rank 1, = 0.5", r)
	}
}
