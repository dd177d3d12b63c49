package check

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestLayerCountNamesMissing: a dump file with one layer fewer (or more)
// than --layers asked for failed with "3 layer entries, 4 layers
// requested (1,2,3,4)" alone, so the user had to compare the file's keys
// with the request by hand to see that layer 3 was the one missing. The
// detail now names the file's labels and the layers missing or not
// requested (derived here from the keys written).
func TestLayerCountNamesMissing(t *testing.T) {
	dir := t.TempDir()
	ids := tensor.FromI64([]int64{1, 2, 3, 4}, 4)
	write := func(name string, layers ...int) string {
		named := []safetensors.Named{{Name: "input_ids", T: ids}}
		for _, l := range layers {
			x := make([]float32, 4*8)
			for i := range x {
				x[i] = float32(l*100 + i)
			}
			named = append(named, safetensors.Named{Name: fmt.Sprintf("hidden_states.%d", l), T: tensor.FromF32(x, 4, 8)})
		}
		p := filepath.Join(dir, name)
		if err := safetensors.WriteFile(p, named, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		path string
		want string
	}{
		{write("gap.safetensors", 1, 2, 4), "3 layer entries, 4 layers requested (1,2,3,4): labelled 1,2,4; layer 3 missing"},
		{write("hf.safetensors", 2, 3, 4), "labelled 2,3,4; layer 1 missing"},
		{write("extra.safetensors", 0, 1, 2, 3, 4), "5 layer entries, 4 layers requested (1,2,3,4): labelled 0,1,2,3,4; layer 0 not requested"},
		{write("two.safetensors", 1, 4), "labelled 1,4; layers 2,3 missing"},
	} {
		r := CheckFile(c.path, CheckOptions{Layers: []int{1, 2, 3, 4}})
		x, ok := r.Rule(capture.RuleLayerCount)
		if !ok || x.Status != capture.Fail || !strings.Contains(x.Detail, c.want) {
			t.Errorf("%s: %+v, want FAIL with %q", filepath.Base(c.path), x, c.want)
		}
	}
}
