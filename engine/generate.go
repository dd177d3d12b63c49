package engine

import (
	"fmt"
	"math"
	"math/rand/v2"

	"hsdb/engine/model"
)

// Sampler picks the next token from a logits row. Temperature 0 is greedy
// (argmax, lowest id on ties, as llama2.c run.c's sample_argmax); otherwise
// it samples from softmax(logits / temperature) with a seeded PCG generator.
type Sampler struct {
	Temperature float64
	rng         *rand.Rand
}

// NewSampler returns a sampler; seed fixes the random stream.
func NewSampler(temperature float64, seed uint64) *Sampler {
	return &Sampler{Temperature: temperature, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// Sample returns the chosen token id, an index into logits (one position's
// row, [vocab] float32; the caller has refused NaN and ±Inf, which argmax
// and softmax would not order).
func (s *Sampler) Sample(logits []float32) int32 {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	if s.Temperature <= 0 {
		return int32(best)
	}
	mx := float64(logits[best])
	probs := make([]float64, len(logits))
	var sum float64
	for i, v := range logits {
		p := math.Exp((float64(v) - mx) / s.Temperature)
		probs[i] = p
		sum += p
	}
	u := s.rng.Float64() * sum
	var acc float64
	for i, p := range probs {
		acc += p
		if u < acc {
			return int32(i)
		}
	}
	return int32(len(logits) - 1)
}

// GenerateOptions controls Generate.
type GenerateOptions struct {
	// Steps is the number of forward positions, prompt included, as
	// llama2.c's -n (run.c's steps): the token sampled at the last position
	// Steps-1 is the last one returned. 0, or more than
	// max_position_embeddings, means max_position_embeddings (run.c
	// clamps steps to seq_len the same way).
	Steps int
	// Stop ends generation when the sampled token is one of these ids
	// (run.c stops at BOS = 1).
	Stop []int32
	// Sampler picks tokens (nil: greedy).
	Sampler *Sampler
	// Hook observes every step (nil: none).
	Hook model.Hook
	// OnToken is called with each generated token; returning false stops.
	OnToken func(id int32) bool
	// OnStop is called with the sampled id that ended generation when it
	// is one of Stop (nil: not called); it is not among the ids returned.
	OnStop func(id int32)
}

// Generate runs a prompt and then decodes one token per step, as run.c's
// generate loop does: it returns the generated ids (prompt excluded), at
// most o.Steps − len(prompt) + 1 of them (positions len(prompt)−1 ..
// o.Steps−1 each choose one). Errors: an empty prompt; a prompt longer
// than max_position_embeddings when o.Steps is clamped to it; logits
// holding NaN or ±Inf (naming the position, with the ids so far); or
// Prefill's and Decode's.
func (e *Engine) Generate(prompt []int32, o GenerateOptions) ([]int32, error) {
	if len(prompt) == 0 {
		return nil, fmt.Errorf("generate: empty prompt (start with BOS)")
	}
	if o.Sampler == nil {
		o.Sampler = NewSampler(0, 0)
	}
	if o.Steps <= 0 || (e.Dims.MaxPos > 0 && o.Steps > e.Dims.MaxPos) {
		o.Steps = e.Dims.MaxPos // run.c: steps > seq_len → seq_len
		if len(prompt) > o.Steps {
			return nil, fmt.Errorf("generate: the prompt has %d tokens, more than max_position_embeddings %d: nothing would be generated", len(prompt), o.Steps)
		}
	}
	logits, err := e.Prefill([][]int32{prompt}, o.Hook, false)
	if err != nil {
		return nil, err
	}
	var out []int32
	for pos := len(prompt) - 1; pos < o.Steps; pos++ {
		row := logits.Row(0)
		if bad := nonFinite(row); bad > 0 {
			return out, fmt.Errorf("generate: the logits at position %d hold %d NaN/Inf of %d; no token can be chosen (break at the layers with `if nan` to find where they start)", pos, bad, len(row))
		}
		next := o.Sampler.Sample(row)
		for _, s := range o.Stop {
			if next == s {
				if o.OnStop != nil {
					o.OnStop(next)
				}
				return out, nil
			}
		}
		out = append(out, next)
		if o.OnToken != nil && !o.OnToken(next) {
			return out, nil
		}
		if pos+1 >= o.Steps {
			break
		}
		if logits, err = e.Decode([]int32{next}, o.Hook); err != nil {
			return out, err
		}
	}
	return out, nil
}

// nonFinite counts NaN and ±Inf values.
func nonFinite(v []float32) int {
	n := 0
	for _, x := range v {
		if x != x || math.IsInf(float64(x), 0) {
			n++
		}
	}
	return n
}
