package debug

import (
	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// stopCtx is the live state of a stop: valid only while the pass is blocked
// in Visit.
type stopCtx struct {
	ev    *model.Event
	views []*model.RankView
	info  *client.Stop
	key   int64
}

func shapesOf(v *model.RankView) []client.TensorShape {
	out := make([]client.TensorShape, len(v.Tensors))
	for i, t := range v.Tensors {
		out[i] = client.TensorShape{Name: t.Name, Shape: append([]int(nil), t.Shape()...), Shard: t.Shard.String()}
	}
	return out
}
