package check

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// TestSummaryRuleDetail: `check DIR --summary` of files that fail a rule
// with no diagnosis behind it (the layer count: a dump checked with the
// wrong --layers) listed the group "FAIL layer count" and the files'
// paths alone, so what was wrong was not said without --full. A file's
// line now carries its first failing rule's detail when it has no
// diagnosis. By hand: the files hold layers 0 and 2, --layers asks 0,1,2.
func TestSummaryRuleDetail(t *testing.T) {
	dir := t.TempDir()
	ids := tensor.FromI64([]int64{1, 2, 3, 4}, 4)
	for f := range 2 {
		named := []safetensors.Named{{Name: "input_ids", T: ids}}
		for _, l := range []int{0, 2} {
			x := make([]float32, 4*8)
			for i := range x {
				x[i] = float32(f*1000 + l*100 + i)
			}
			named = append(named, safetensors.Named{Name: fmt.Sprintf("hidden_states.%d", l), T: tensor.FromF32(x, 4, 8)})
		}
		if err := safetensors.WriteFile(filepath.Join(dir, fmt.Sprintf("seq_%d.safetensors", f)), named, nil); err != nil {
			t.Fatal(err)
		}
	}
	pr := CheckPath(dir, CheckOptions{Layers: []int{0, 1, 2}})
	sum := strings.Join(pr.SummaryLines(5), "\n")
	want := "seq_0.safetensors: layer count: 2 layer entries, 3 layers requested (0,1,2)"
	if !strings.Contains(sum, "FAIL layer count") || !strings.Contains(sum, want) {
		t.Errorf("summary lacks %q:\n%s", want, sum)
	}
}
