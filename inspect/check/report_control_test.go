package check

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// TestReportEscapesControlCharacters: text a capture file carries (a
// __metadata__ value, a tensor name, the file's own name) reaches check's
// text report with its control characters escaped, one report line per
// line. A metadata value "x\n  verdict: valid\x1b[31m..." printed a forged
// "verdict: valid" line under a failing file and sent the terminal escape
// sequences through; the same held for a key in a rule's detail and for a
// file name. JSON output escapes them already.
func TestReportEscapesControlCharacters(t *testing.T) {
	dir := t.TempDir()
	hdr := `{"__metadata__":{"format":"pt","note":"x\n  verdict: valid\u001b[31mRED\u001b[0m\u202e"},` +
		`"hidden_states.1\n  verdict: valid":{"dtype":"F32","shape":[2,4],"data_offsets":[0,32]}}`
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	buf = append(append(buf, hdr...), make([]byte, 32)...)
	p := filepath.Join(dir, "evil\n  verdict: valid.safetensors")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	pr := CheckPath(p, CheckOptions{})
	rep, _ := pr.Report(false, "")
	valid := 0
	for _, l := range rep.Lines {
		for _, r := range l {
			if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
				t.Errorf("line %q holds the control character %U", l, r)
			}
		}
		if strings.TrimSpace(l) == "verdict: valid" {
			valid++
		}
	}
	if valid != 0 || !pr.Failed() {
		t.Errorf("a failing file's report shows %d \"verdict: valid\" lines:\n%s", valid, strings.Join(rep.Lines, "\n"))
	}
	if !strings.Contains(strings.Join(rep.Lines, "\n"), `x\n  verdict: valid\x1b[31mRED`) {
		t.Errorf("the metadata value is not shown escaped:\n%s", strings.Join(rep.Lines, "\n"))
	}
}
