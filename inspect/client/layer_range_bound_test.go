package client

import (
	"strings"
	"testing"
)

// TestLayerRangeBounded: `hsdb check F --layers 0-2000000000`
// built a list of two billion layers and ran out of memory (a crash);
// REPL `capture layers` and capture/diff's --layers share the parser. A
// layer of 4096 or more (past any config's num_hidden_layers) is refused
// before anything is built; the largest accepted range is built whole.
func TestLayerRangeBounded(t *testing.T) {
	for _, s := range []string{"0-2000000000", "4096", "1,9223372036854775807"} {
		if _, err := ParseLayers(s); err == nil || !strings.Contains(err.Error(), "below 4096") {
			t.Errorf("ParseLayers(%q) = %v, want the bound", s, err)
		}
	}
	got, err := ParseLayers("0-4095")
	if err != nil || len(got) != 4096 || got[0] != 0 || got[4095] != 4095 {
		t.Fatalf("ParseLayers(0-4095): %d layers, %v", len(got), err)
	}
}
