//go:build cu

package main

// The cu build tag links gorgonia.org/cu, whose package init ends the
// process on a machine without a GPU; only cmd/hsdb-cuda-worker is built
// with it. The front end never is (build it with -tags cuda, or without
// tags): this undefined name stops the build.
var _ = hsdb_front_end_is_never_built_with_the_cu_tag_build_cmd_hsdb_cuda_worker
