package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/engine/worker"
)

// modelFlags are the flags every command that loads a model takes.
type modelFlags struct {
	model  string
	tp     int
	device string
	dtype  string
	ep     bool
	moe    string
	layers string
	// rank workers (engine/worker)
	workers       bool
	listen        string
	workerTimeout time.Duration
	pp            int
	workerBin     string
	log           io.Writer // where the front's notes go (set by load)
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.model, "model", "", "model: an HF directory (config.json + safetensors), a llama2.c .bin, or empty for the embedded stories260K")
	fs.IntVar(&m.tp, "tp", 1, "tensor-parallel world size (ranks)")
	fs.StringVar(&m.device, "device", "cpu", "cpu or cuda")
	fs.StringVar(&m.dtype, "dtype", "", "convert weights on load: f32, bf16 or f16 (default: as stored)")
	fs.BoolVar(&m.ep, "ep", false, "MoE models: whole experts per rank (expert parallel, over the --tp ranks) instead of splitting each expert")
	fs.StringVar(&m.moe, "moe", "tp", "MoE expert split: tp (each expert's intermediate split over ranks, vLLM's default) or ep (same as --ep)")
	fs.StringVar(&m.layers, "layers", "", "load only decoder layers A-B (with embeddings, final norm and head), e.g. 58-60")
	fs.BoolVar(&m.workers, "workers", false, "run each rank in its own worker process (hsdb worker), so a failing rank never ends the session")
	fs.StringVar(&m.listen, "listen", "", "run the ranks in workers that join at this address (hsdb worker --connect ADDR --token T, started by a launcher); prints the token")
	fs.StringVar(&m.workerBin, "worker-bin", "", "the hsdb binary --workers starts as `hsdb worker` (default: this one; a -tags cuda build for --device cuda)")
	fs.IntVar(&m.pp, "pp", 1, "pipeline stages (with --workers or --listen): decoder layers split into N stages, each a --tp group of workers")
	fs.DurationVar(&m.workerTimeout, "worker-timeout", 10*time.Minute, "with workers: how long a worker may go without a message (computing, or in a collective) before it is declared hung and killed")
}

func (m *modelFlags) options() (engine.Options, error) {
	o := engine.Options{TP: m.tp, Device: m.device}
	if m.tp < 1 {
		return o, fmt.Errorf("--tp %d: the world size must be at least 1", m.tp)
	}
	switch m.moe {
	case "tp":
		o.EP = m.ep
	case "ep":
		o.EP = true
	default:
		return o, fmt.Errorf("--moe %q: want tp or ep", m.moe)
	}
	if m.layers != "" {
		lr, err := model.ParseLayerRange(m.layers)
		if err != nil {
			return o, err
		}
		o.Layers = &lr
	}
	if m.dtype != "" {
		dt, err := tensor.ParseDType(m.dtype)
		if err != nil {
			return o, fmt.Errorf("--dtype: %w", err)
		}
		if dt != tensor.F32 && dt != tensor.BF16 && dt != tensor.F16 {
			return o, fmt.Errorf("--dtype %s: weights can be kept as f32, bf16 or f16", m.dtype)
		}
		o.DType = dt
	}
	return o, nil
}

// load opens the model and warns on w about what the load skipped:
// checkpoint tensors the architecture does not use (a config.json naming
// the wrong architecture, extra layers) and the parts of a wrapper that
// were left out.
func (m *modelFlags) load(w io.Writer) (*engine.Engine, error) {
	o, err := m.options()
	if err != nil {
		return nil, err
	}
	if m.pp < 1 {
		return nil, fmt.Errorf("--pp %d: want at least one stage", m.pp)
	}
	if m.pp > 1 && !m.workers && m.listen == "" {
		return nil, fmt.Errorf("--pp %d: pipeline stages run in workers: add --workers (or --listen ADDR)", m.pp)
	}
	if m.workers || m.listen != "" {
		cfg := worker.Config{Listen: m.listen, Spawn: m.listen == "", Timeout: m.workerTimeout, Log: w, PP: m.pp}
		if m.workerBin != "" {
			cfg.Command = []string{m.workerBin, "worker"}
		}
		f, err := worker.Start(m.model, o, cfg)
		if err != nil {
			return nil, err
		}
		o.Workers = f
	}
	e, err := engine.Open(m.model, o)
	if err != nil {
		if o.Workers != nil {
			o.Workers.Close()
		}
		return nil, err
	}
	if e.Skipped != "" {
		fmt.Fprintf(w, "hsdb: note: %s\n", e.Skipped)
	}
	if n := len(e.Report.Unused); n > 0 {
		show := e.Report.Unused[:min(n, 4)]
		more := ""
		if n > len(show) {
			more = fmt.Sprintf(" and %d more", n-len(show))
		}
		fmt.Fprintf(w, "hsdb: warning: %d checkpoint tensors are not used by %s: %s%s (HF warns the same; check config.json if this is unexpected)\n",
			n, e.Dims.Arch, strings.Join(show, ", "), more)
	}
	return e, nil
}
