// Package worker runs an engine's tensor-parallel ranks in worker
// processes, one per rank (`hsdb --workers`, `hsdb worker`), so that a
// rank that dies (a signal, out of memory, a device error) or hangs takes
// only its process down and the debugger's session survives, and so that
// ranks can run on several hosts (`--listen`, pipeline stages with
// `--pp`). vLLM runs one worker process per GPU for the same reason;
// delve separates debugger and target.
//
// The process boundary is at the rank: the front (Front, an
// engine.Workers) keeps the debugger, the config, the module tree and the
// sequences; each worker (Serve) loads its rank's shard and runs the
// forward pass. A worker asks the front's hook whether a site is wanted
// only at the sites the hook's model.SiteFilter names (sent with each
// step and resume; every site for a hook that cannot say, and after an
// interrupt, which comes as a message of its own); at a wanted site the
// front's stand-in for the rank meets the other ranks (model.Pass.Meet) with a view whose tensors are handles,
// and the debugger's statistics (Moments) and value slices (ToHost) are
// computed on the worker (proxy), so only their results cross. The
// front sets up direct links between the workers (peers.go: each worker
// listens, the front hands out the addresses, a link needs the session
// token and the expected slot): the collectives of a stage's workers
// exchange their tensors over them and sum in rank order on every rank,
// exactly as the in-process CPU communicator sums, and a pipeline
// stage's rank r sends its hidden_states and residual straight to the
// next stage's rank r. With Config.Hub both go through the front
// instead (hub.go), for hosts whose workers cannot reach each other. A
// stage holds the model's ends only where vLLM places them (the embedding
// on the first, the final norm and LM head on the last), so `lens` on an
// earlier stage's tensor runs on the last stage's worker.
//
// The protocol (wire.go, msg.go) is length-prefixed binary frames over
// TCP, versioned; the worker speaks first with the session token, which
// the front checks in constant time. Every read is bounded (a hello frame
// by 64 KiB, others by 1 GiB; counts by the bytes left), every wait on a
// worker by Config.Timeout, and nothing a peer sends is ever executed.
//
// It imports the engine and its backends; nothing in engine/ imports it.
package worker
