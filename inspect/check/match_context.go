package check

import (
	"errors"
	"fmt"
)

// ErrLongerThanContext is wrapped when a sequence Match would run is
// longer than the model's max_position_embeddings: no engine computed it
// (vLLM's max_model_len and HF's generation stop there), and running it
// costs time quadratic in its length (a 25 MB file of one 100,000-token
// sequence ran for minutes on stories260K); nothing is compared (check
// and diff: nothing comparable, exit 2).
var ErrLongerThanContext = errors.New("longer than the model's context")

// withinContext refuses sequence lengths over maxPos (0: no bound);
// given says the lengths came from the file or --seq-lens; ids is the
// file's name of the token ids' tensor (Layout.IDsName).
func withinContext(lens []int, maxPos int, given bool, ids string) error {
	for i, n := range lens {
		if maxPos <= 0 || n <= maxPos {
			continue
		}
		if !given {
			return fmt.Errorf("%w: %s holds %d tokens and the file says nothing of its sequences, so they would run as one sequence, longer than max_position_embeddings %d: give the sequences' lengths with --seq-lens", ErrLongerThanContext, ids, n, maxPos)
		}
		return fmt.Errorf("%w: sequence %d has %d tokens, more than max_position_embeddings %d", ErrLongerThanContext, i, n, maxPos)
	}
	return nil
}
