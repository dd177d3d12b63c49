package worker

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
)

// checkSplit refuses a world size the model's config cannot be split over
// (model.Config.Validate: heads, kv heads, intermediate sizes), as the
// workers would each refuse it after starting. A config that does not
// parse is left to the load, which reports it.
func checkSplit(path string, world int) error {
	b, _, err := modelpath.ConfigJSON(path)
	if err != nil {
		return nil
	}
	c, _, err := model.ParseConfig(b)
	if err != nil {
		return nil
	}
	if err := c.Validate(world); err != nil {
		if path == "" {
			path = "embedded:stories260K"
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// StageLayers splits n decoder layers into pp consecutive stages as vLLM's
// get_pp_indices does (vllm/distributed/utils.py): n/pp layers each, the
// remainder one more each on the stages before the last, from the
// second-last backwards. Error: fewer layers than stages.
func StageLayers(n, pp int) ([]model.LayerRange, error) {
	if pp < 1 {
		return nil, fmt.Errorf("--pp %d: want at least one stage", pp)
	}
	if err := model.CheckStages(n, pp, nil); err != nil {
		return nil, err
	}
	parts := make([]int, pp)
	for i := range parts {
		parts[i] = n / pp
	}
	for i := 2; i < n%pp+2; i++ {
		parts[pp-i]++
	}
	out := make([]model.LayerRange, pp)
	first := 0
	for i, k := range parts {
		out[i] = model.LayerRange{First: first, Last: first + k - 1}
		first += k
	}
	return out, nil
}
