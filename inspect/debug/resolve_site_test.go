package debug

import (
	"testing"
)

// TestResolveSiteAmbiguousLists: a pattern naming several sites is
// refused listing them: all of them when there are two or three (no
// "..." after a complete list), the first two and "..." beyond that.
func TestResolveSiteAmbiguousLists(t *testing.T) {
	s := newSession(t, 1)
	for path, want := range map[string]string{
		"layers.1-2.mlp": `site "layers.1-2.mlp" matches 2 sites (model.layers.1.mlp, model.layers.2.mlp): name one`,
		"layers.1-3.mlp": `site "layers.1-3.mlp" matches 3 sites (model.layers.1.mlp, model.layers.2.mlp, model.layers.3.mlp): name one`,
		"layers.*.mlp":   `site "layers.*.mlp" matches 5 sites (model.layers.0.mlp, model.layers.1.mlp, ...): name one`,
	} {
		_, err := ResolveSite(s.E.Tree, path)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", path, err, want)
		}
	}
}
