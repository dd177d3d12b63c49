package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestIDsEmptyItemRefused: a token list with an empty item between commas
// ("1,,2", a leading or trailing comma) is refused by capture --ids and
// generate --ids, naming the item, as the debugger's `input ids` refuses
// it; it was silently read as the ids around it (1,2: a sequence other
// than the one typed). Spaces still separate ids as commas do ("1 2, 3").
func TestIDsEmptyItemRefused(t *testing.T) {
	for _, ids := range []string{"1,,2", "1,2,", ",1,2", "1,2;3,,4"} {
		var out, errOut bytes.Buffer
		code := hsdbMain([]string{"capture", "--ids", ids, "--layers", "1", "--out", filepath.Join(t.TempDir(), "d")}, stdio{Out: &out, Err: &errOut})
		if code == 0 || !strings.Contains(errOut.String(), "is empty") {
			t.Errorf("capture --ids %q: exit %d, stderr %q; want the empty item refused", ids, code, errOut.String())
		}
		if strings.Contains(ids, ";") {
			continue
		}
		out.Reset()
		errOut.Reset()
		code = hsdbMain([]string{"generate", "--ids", ids, "-n", "4"}, stdio{Out: &out, Err: &errOut})
		if code == 0 || !strings.Contains(errOut.String(), "is empty") {
			t.Errorf("generate --ids %q: exit %d, stderr %q; want the empty item refused", ids, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := hsdbMain([]string{"generate", "--ids", "1 403, 407", "-n", "3", "--json"}, stdio{Out: &out, Err: &errOut}); code != 0 ||
		!strings.Contains(out.String(), `"prompt_ids":[1,403,407]`) {
		t.Errorf("generate --ids \"1 403, 407\": exit %d, %s%s", code, out.String(), errOut.String())
	}
}
