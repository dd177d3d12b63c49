package arch_test

import (
	"strings"
	"testing"

	"hsdb/engine/model"
)

// TestZeroGroups: DeepSeek-V3's topk_group 0 was read as 1 and
// the model ran, routing unlike HF (whose grouped top-k keeps no group
// then); n_group 0 likewise. Both are refused naming the field and the
// range accepted (model.CheckBounds: at least 1; null means one group);
// the released config (n_group 8, topk_group 4) still parses.
func TestZeroGroups(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{`"topk_group":4`, `"topk_group":0`, "config.json: topk_group 0 is out of range (want an integer from 1 to 16384)"},
		{`"n_group":8`, `"n_group":0`, "config.json: n_group 0 is out of range (want an integer from 1 to 16384)"},
	} {
		cfg := strings.Replace(deepseekV3Real, c.from, c.to, 1)
		if cfg == deepseekV3Real {
			t.Fatalf("%s not in the released config", c.from)
		}
		_, _, err := model.ParseConfig([]byte(cfg))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.to, err, c.want)
		}
	}
	if _, _, err := model.ParseConfig([]byte(deepseekV3Real)); err != nil {
		t.Fatal(err)
	}
}
