package capture

import "hsdb/engine/model"

// Target is a model capture and check run forward passes on, without
// importing the engine driver: its sizes and module tree, a prefill that
// runs sequences as one flattened batch (vLLM's token batch, each sequence
// from position 0) with a hook, and what a dump's manifest says about it.
// The in-process debugger (inspect/debug.Local) builds it from its
// *engine.Engine, each prefill borrowing the engine from the session;
// tests build it the same way:
//
//	capture.Target{Dims: e.Dims, Tree: e.Tree, Info: capture.ModelInfoFor(e.Path, e.Dims, e.World, e.Device(0).Name()),
//		Prefill: func(s [][]int32, h model.Hook) error { _, err := e.Prefill(s, h, false); return err }}
//
// A prefill replaces the engine's current sequences.
type Target struct {
	Dims    *model.Dims
	Tree    *model.Tree
	Info    ModelInfo
	Prefill func(seqs [][]int32, hook model.Hook) error
	// Interrupt, when set, is the engine's Interrupt: ranks that ask the
	// hook only at the sites its model.SiteFilter names (rank workers)
	// report where they are before a stop is placed, and done runs then.
	// Nil runs done at once (ranks that ask at every site).
	Interrupt func(done func())
}
