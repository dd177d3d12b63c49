package arch

import (
	"hsdb/engine/backend"
	"hsdb/engine/model"
)

func rep(t backend.Tensor) model.Sharding { return model.Sharding{Kind: model.Replicated} }

func shard(r [2]int, full int) model.Sharding {
	return model.Sharding{Kind: model.Sharded, Start: r[0], End: r[1], Full: full}
}

var partial = model.Sharding{Kind: model.Partial}
