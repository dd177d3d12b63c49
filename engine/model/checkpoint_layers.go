package model

import (
	"regexp"
	"strconv"
)

var checkpointLayerIndex = regexp.MustCompile(`(?:^|\.)layers\.(\d+)\.`)

// CheckpointLayers counts the decoder layers a checkpoint's tensor names
// hold: the distinct N of "layers.N." anywhere in a name (HF's
// model.layers.N.…, a wrapper's language_model.model.layers.N.…), and the
// highest such N; (0, -1) when no name has one. It reads names only.
func CheckpointLayers(names []string) (count, highest int) {
	seen := map[int]bool{}
	highest = -1
	for _, n := range names {
		if m := checkpointLayerIndex.FindStringSubmatch(n); m != nil {
			if i, err := strconv.Atoi(m[1]); err == nil {
				seen[i] = true
				highest = max(highest, i)
			}
		}
	}
	return len(seen), highest
}
