package model

import (
	"hsdb/engine/backend"
	"hsdb/engine/tensor"
)

// LensLogits applies rank's final norm and LM head lw on dev to rows of t
// (a replicated [tokens, hidden] stream at a stop): RMSNorm, then Linear
// with the rank's vocabulary shard, no collective. It returns the logits
// of the shard's real tokens, [len(rows), hi-lo] f32 on the host, and lo,
// the shard's first token id; nil when the shard holds only vLLM's vocab
// padding. Device failures panic as the backend's ops do.
func LensLogits(dev backend.Device, lw Lens, t backend.Tensor, rows []int32) (logits *tensor.Tensor, lo int) {
	x := dev.GatherRows(t, rows)
	defer dev.Free(x)
	y := dev.RMSNorm(x, lw.Norm, lw.Eps)
	defer dev.Free(y)
	lg := dev.Linear(y, lw.Head, nil)
	defer dev.Free(lg)
	lo = lw.Vocab[0]
	if end := min(lw.Vocab[1], lw.VocabSize); end > lo {
		return dev.ToHost(lg, 0, len(rows), 0, end-lo), lo
	}
	return nil, lo
}

// LensDevice is a rank's device that holds the rank's final norm and LM
// head itself, away from the debugger (a rank worker's stand-in in the
// front): LensLogits there computes what the function LensLogits computes
// with the rank's own Lens, and also returns vocab_size. Failures panic as
// a device op's do (*backend.DeviceError).
type LensDevice interface {
	LensLogits(t backend.Tensor, rows []int32) (logits *tensor.Tensor, lo, vocabSize int)
}
