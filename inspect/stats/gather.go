package stats

import (
	"errors"
	"fmt"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Part is one rank's copy of a site tensor on the host: Data is [rows, cols]
// float32 (cols = the rank's columns) and Shard its label at the site.
type Part struct {
	Rank  int
	Shard model.Sharding
	Data  *tensor.Tensor
}

// ErrShardMismatch is wrapped when ranks' shards do not make one tensor:
// two ranks hold the same columns with different values, ranges overlap
// partly, leave columns uncovered, or the ranks disagree on the kind.
var ErrShardMismatch = errors.New("shards do not fit together")

// Gather rebuilds the full tensor that the ranks' parts stand for, as the
// collective after the site would: Replicated gives rank 0's copy; Sharded
// places each rank's columns at [Start, End) of a [rows, Full] tensor (vLLM's
// all-gather on the last dim; ranks whose ranges coincide, as replicated kv
// heads do, must hold equal values; a range may be shorter than the other
// ranks' or empty, as the last vocab shards are once the padding is
// dropped, with Data [rows, End-Start]); Partial sums the parts (the all-reduce
// of a row-parallel linear). The result is a new [rows, cols] F32 tensor
// except for Replicated. Errors wrap ErrShape or ErrShardMismatch and name
// the ranks and columns.
func Gather(parts []Part) (*tensor.Tensor, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("gather: no ranks")
	}
	kind := parts[0].Shard.Kind
	rows := parts[0].Data.Rows()
	for _, p := range parts {
		if p.Shard.Kind != kind {
			return nil, fmt.Errorf("%w: rank %d is %s, rank %d is %s", ErrShardMismatch, parts[0].Rank, parts[0].Shard, p.Rank, p.Shard)
		}
		if p.Data.Rows() != rows {
			return nil, fmt.Errorf("%w: rank %d has %d rows, rank %d has %d", ErrShape, parts[0].Rank, rows, p.Rank, p.Data.Rows())
		}
	}
	switch kind {
	case model.Replicated:
		return parts[0].Data, nil
	case model.Partial:
		return sumParts(parts)
	}
	return placeShards(parts, rows)
}

func sumParts(parts []Part) (*tensor.Tensor, error) {
	n := parts[0].Data.Numel()
	out := make([]float32, n)
	for _, p := range parts {
		if p.Data.Numel() != n {
			return nil, fmt.Errorf("%w: partial sums of rank %d %s and rank %d %s", ErrShape, parts[0].Rank, tensor.ShapeString(parts[0].Data.Shape), p.Rank, tensor.ShapeString(p.Data.Shape))
		}
		for i, v := range p.Data.F32() {
			out[i] += v
		}
	}
	return tensor.FromF32(out, parts[0].Data.Shape...), nil
}

func placeShards(parts []Part, rows int) (*tensor.Tensor, error) {
	full := parts[0].Shard.Full
	out := make([]float32, rows*full)
	owner := make([]int, full) // rank+1 that filled each column, 0 for none
	for _, p := range parts {
		s := p.Shard
		w := s.End - s.Start
		if s.Full != full || s.Start < 0 || s.End > full || w < 0 || w != p.Data.Cols() {
			hint := ""
			if p.Data.Cols() > w && s.End == full {
				hint = ": more columns than its range, as if padding past the full width were kept"
			}
			return nil, fmt.Errorf("%w: rank %d holds %d columns labelled %s (full %d)%s", ErrShape, p.Rank, p.Data.Cols(), s, full, hint)
		}
		src := p.Data.F32()
		for c := s.Start; c < s.End; c++ {
			if o := owner[c]; o != 0 {
				prev := parts[o-1]
				if prev.Shard.Start != s.Start || prev.Shard.End != s.End {
					return nil, fmt.Errorf("%w: rank %d columns %d:%d overlap rank %d columns %d:%d", ErrShardMismatch, p.Rank, s.Start, s.End, prev.Rank, prev.Shard.Start, prev.Shard.End)
				}
				for r := range rows {
					if a, b := out[r*full+c], src[r*w+c-s.Start]; a != b && (a == a || b == b) {
						return nil, fmt.Errorf("%w: ranks %d and %d both hold columns %d:%d but differ at [%d, %d]: %g vs %g", ErrShardMismatch, prev.Rank, p.Rank, s.Start, s.End, r, c, a, b)
					}
				}
				continue
			}
			owner[c] = indexOf(parts, p.Rank) + 1
			for r := range rows {
				out[r*full+c] = src[r*w+c-s.Start]
			}
		}
	}
	for c, o := range owner {
		if o == 0 {
			end := c
			for end < full && owner[end] == 0 {
				end++
			}
			return nil, fmt.Errorf("%w: columns %d:%d of %d are held by no rank", ErrShardMismatch, c, end, full)
		}
	}
	return tensor.FromF32(out, rows, full), nil
}

func indexOf(parts []Part, rank int) int {
	for i, p := range parts {
		if p.Rank == rank {
			return i
		}
	}
	return -1
}
