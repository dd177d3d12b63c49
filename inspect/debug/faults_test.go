package debug

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

// TestFaultKindsDocumented: the kinds client.FaultKinds documents (and
// `help inject` shows) are exactly those the engine's blocks and the
// capturer apply, each with what it imitates.
func TestFaultKindsDocumented(t *testing.T) {
	var doc, applied []string
	for _, k := range client.FaultKinds {
		doc = append(doc, k.Kind)
		if k.Does == "" || k.Imitates == "" || k.Recorded != capture.IsRecordFault(k.Kind) {
			t.Errorf("%s: %+v", k.Kind, k)
		}
	}
	applied = append(applied, engineKinds...)
	for _, k := range []string{capture.FaultNoResidual, capture.FaultScaleResidual, capture.FaultShiftRows, capture.FaultNaNAt, capture.FaultKeepShard, capture.FaultGatherRows} {
		applied = append(applied, k)
	}
	slices.Sort(doc)
	slices.Sort(applied)
	if !slices.Equal(doc, applied) {
		t.Fatalf("documented %v, applied %v", doc, applied)
	}
}

// faultCase is one injected fault and what check must then say of the
// dump (substrings of its report) once the faults are cleared: the named
// layer, factor, shift, rank or routing.
type faultCase struct {
	fault client.Fault
	minTP int // the fault changes nothing below this world size (perturb-rank: is refused)
	// dumpErr, when set, is in the error of the dump, which refuses the
	// data (ranks that disagree); the captures are then checked as a
	// pipeline would have written them.
	dumpErr string
	want    []string // in check's and diff's report
	sites   []string // site captures (SITE:TENSOR) beside the layers
}

// runInjected opens model at tp, captures layers while fault is injected,
// dumps, clears the fault and checks the dump with the clean model.
func runInjected(t *testing.T, path string, tp int, seq []int32, layers []int, c faultCase) (client.CheckReport, *client.Outcome, *capture.Manifest, error) {
	t.Helper()
	e, err := engine.Open(path, engine.Options{TP: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := New(e)
	l := NewLocal(s)
	if err := s.SetBatch([][]int32{seq}); err != nil {
		t.Fatal(err)
	}
	if err := l.CaptureLayers(layers, capture.WhatStream); err != nil {
		t.Fatal(err)
	}
	for _, st := range c.sites {
		site, tensor, _ := strings.Cut(st, ":")
		if err := l.CaptureSite(site, tensor); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Inject(c.fault); err != nil {
		if refusedBelow(c.fault.Kind) && tp < c.minTP {
			return client.CheckReport{}, nil, nil, err
		}
		t.Fatal(err)
	}
	o, err := l.Run()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "dump")
	m, derr := l.Dump(dir, client.DumpRequest{})
	if derr != nil {
		// the dump refuses non-finite values: write the captures as a
		// pipeline would and check that file instead
		seqs, _, err := l.capturer().Result()
		if err != nil || len(seqs) != 1 {
			t.Fatalf("dump: %v; result: %v", derr, err)
		}
		named := []safetensors.Named{{Name: "input_ids", T: idsTensor(seq)}}
		for _, ly := range layers {
			k := fmt.Sprintf("hidden_states.%d", ly)
			named = append(named, safetensors.Named{Name: k, T: seqs[0].Tensors[k]})
		}
		dir = filepath.Join(t.TempDir(), "pipeline.safetensors")
		if err := safetensors.WriteFile(dir, named, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.ClearFaults(); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Check(dir, client.CheckRequest{Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Diff(dir, client.CheckRequest{Layers: layers, Output: "full"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Exit != rep.Exit {
		t.Errorf("check exits %d, diff %d", rep.Exit, d.Exit)
	}
	rep.Lines = append(rep.Lines, d.Lines...)
	return rep, o, m, derr
}

func idsTensor(seq []int32) *tensor.Tensor {
	ids := make([]int64, len(seq))
	for i, v := range seq {
		ids[i] = int64(v)
	}
	return tensor.FromI64(ids, len(ids))
}

// TestInjectNamed: each fault injected into the embedded model
// (stories260K) and the DeepSeek fixture at tp 1, 2 and 4, captured and
// dumped, is named by check run with the clean model: the run says it ran
// under injection, the manifest records it, and the report names the
// fault's layer, factor, shift, rank or routing.
func TestInjectNamed(t *testing.T) {
	stories := []faultCase{
		{fault: client.Fault{Kind: capture.FaultNoResidual, Rank: -1}, want: []string{"matches hidden_states of layer 2 (vLLM's un-summed half"}},
		{fault: client.Fault{Kind: capture.FaultScaleResidual, Rank: -1}, want: []string{"scaled by 0.5 (= 1/2)"}},
		{fault: client.Fault{Kind: capture.FaultShiftRows, Rank: -1}, want: []string{"with rows shifted by +1 (row i holds token i+1)"}},
		{fault: client.Fault{Kind: capture.FaultNaNAt, Rank: -1, Token: 3, Channel: 5, Site: "model.layers.2"}, want: []string{"1 NaN and 0 Inf in hidden_states.2 (layer 2) at (token 3, channel 5)"}},
		{fault: client.Fault{Kind: capture.FaultKeepShard, Rank: 1, Site: "model.layers.2"}, minTP: 2, dumpErr: "hidden_states.2 is [10,",
			want: []string{"matches stream of layer 2, columns", "(rank 1 of tp"}},
		{fault: client.Fault{Kind: capture.FaultGatherRows, Rank: -1, Site: "model.layers.4"}, minTP: 2, dumpErr: "hidden_states.4",
			want: []string{"first problem: hidden_states.4 (its row blocks side by side) holds", "column shards stacked along rows; side by side", "put side by side match stream of layer 4 (cos 1.000000"}},
		{fault: client.Fault{Kind: model.FaultChunkNoContext, Rank: -1, Token: 6}, want: []string{"chunk boundary without context at token 6", "vLLM #52909"}},
		{fault: client.Fault{Kind: model.FaultPerturbRank, Rank: -1, Site: "model.layers.2"}, minTP: 2, dumpErr: "hidden_states.2: ",
			want: []string{"first departure: layer 4"}},
		// Rank 0 diverged alone: the dump must name rank 0, not the first
		// rank whose copy differs from rank 0's; rank 0's copy is what the
		// capture keeps, so check sees it depart at layer 2 itself.
		{fault: client.Fault{Kind: model.FaultPerturbRank, Rank: 0, Site: "model.layers.2"}, minTP: 2, dumpErr: "hidden_states.2: ",
			want: []string{"first departure: layer 2"}},
		{fault: client.Fault{Kind: model.FaultSkipAllReduce, Rank: -1, Site: "model.layers.2.self_attn.o_proj"}, minTP: 2, dumpErr: "hidden_states.2: ",
			want: []string{"first departure: layer 2"}},
	}
	ds := []faultCase{
		{fault: client.Fault{Kind: capture.FaultScaleResidual, Rank: -1}, want: []string{"scaled by 0.4 (= 1/routed_scaling_factor)", "vLLM #13232"}},
		{fault: client.Fault{Kind: model.FaultChunkNoContext, Rank: -1, Token: 5}, want: []string{"chunk boundary without context at token 5"}},
		{fault: client.Fault{Kind: model.FaultRouterSoftmax, Rank: -1}, sites: []string{"model.layers.1.mlp.gate:topk_ids", "model.layers.1.mlp.gate:topk_weights"},
			want: []string{"the first departure is at layer 1, the first MoE layer captured", "TRT-Model-Connect #662", "the router at layer 1 chose the model's experts but weighted them differently"}},
		{fault: client.Fault{Kind: model.FaultRouterNoBias, Rank: -1, Site: "model.layers.1"}, sites: []string{"model.layers.1.mlp.gate:topk_ids"},
			want: []string{"the router at layer 1 chose other experts than the model's"}},
		{fault: client.Fault{Kind: model.FaultRouterNoBias, Rank: -1}, want: []string{"the first departure is at layer 1, the first MoE layer captured"}},
		{fault: client.Fault{Kind: model.FaultVocabPadding, Rank: -1}, minTP: 2, want: []string{"first departure: layer 0"}},
		{fault: client.Fault{Kind: model.FaultSkipAllReduce, Rank: -1, Site: "model.layers.3.self_attn.o_proj"}, minTP: 2, dumpErr: "hidden_states.3: ",
			want: []string{"first departure: layer 3"}},
	}
	storySeq := []int32{1, 403, 407, 261, 378, 365, 301, 290, 411, 275}
	dsSeq := []int32{20, 8, 87, 53, 95, 56, 7, 86, 50, 39, 99, 91}
	for _, m := range []struct {
		name, path string
		seq        []int32
		layers     []int
		cases      []faultCase
	}{{"stories260K", "", storySeq, []int{0, 2, 4}, stories}, {"deepseek_v3", "../../testdata/hf/deepseek_v3", dsSeq, []int{0, 1, 3}, ds}} {
		for _, tp := range []int{1, 2, 4} {
			for _, c := range m.cases {
				t.Run(fmt.Sprintf("%s/tp%d/%s", m.name, tp, c.fault.Kind), func(t *testing.T) {
					rep, o, man, derr := runInjected(t, m.path, tp, m.seq, m.layers, c)
					if refusedBelow(c.fault.Kind) && tp < c.minTP {
						if derr == nil || !strings.Contains(derr.Error(), "needs tp > 1") {
							t.Errorf("perturb-rank at tp %d: %v", tp, derr)
						}
						return
					}
					text := strings.Join(rep.Lines, "\n")
					switch {
					case c.dumpErr != "" && tp >= c.minTP && (derr == nil || !strings.Contains(derr.Error(), c.dumpErr) ||
						strings.HasSuffix(c.dumpErr, ": ") && (!strings.Contains(derr.Error(), c.dumpErr+replicaWords(c.fault, tp)) ||
							!strings.Contains(derr.Error(), "`break layers."+strings.TrimSuffix(strings.TrimPrefix(c.dumpErr, "hidden_states."), ": ")+".*`"))):
						t.Errorf("dump error %v, want %q", derr, c.dumpErr+replicaWords(c.fault, tp))
					case (c.dumpErr == "" || tp < c.minTP) && derr != nil && c.fault.Kind != capture.FaultNaNAt:
						t.Errorf("dump: %v", derr)
					}
					if o.Done == nil || !strings.Contains(strings.Join(o.Done.Notes, " "), "INJECTED FAULTS") {
						t.Errorf("the run does not say it ran under injection: %+v", o.Done)
					}
					if derr == nil && (man == nil || len(man.Faults) != 1 || !strings.Contains(text, "written under INJECTED FAULTS")) {
						t.Errorf("manifest faults %v\n%s", man.Faults, text)
					}
					if tp < c.minTP {
						if strings.Contains(text, "first departure") || strings.Contains(text, "FAIL  matches model") || strings.Contains(text, "FAIL  replicas") {
							t.Errorf("at tp %d the fault changes nothing, yet:\n%s", tp, text)
						}
						return
					}
					if rep.Exit != 1 {
						t.Errorf("exit %d", rep.Exit)
					}
					for _, w := range c.want {
						if !strings.Contains(text, w) {
							t.Errorf("report lacks %q:\n%s", w, text)
						}
					}
				})
			}
		}
	}
}

// replicaWords is what the dump's cross-rank check must say of a fault
// that makes the ranks' replicated copies differ, derived from the fault:
// perturb-rank scales one rank's copy (default the last), so the other
// tp-1 agree and that rank is named alone; skip-allreduce leaves each
// rank its own partial sum, so every copy differs from every other; two
// copies cannot say which one is off.
func replicaWords(f client.Fault, tp int) string {
	switch {
	case tp == 2:
		return "ranks 0 and 1 differ by"
	case f.Kind == model.FaultPerturbRank:
		r := f.Rank
		if r < 0 {
			r = tp - 1
		}
		return fmt.Sprintf("rank %d's copy differs from the other %d ranks', which agree", r, tp-1)
	default:
		return "the copies differ on every rank, not on one alone (ranks 1,2,3 differ from rank 0"
	}
}

// refusedBelow: faults inject refuses where they cannot act (one rank).
// skip-allreduce and vocab-padding were accepted at tp 1, where they
// change nothing (no all-reduce, the vocabulary unsplit), and every run
// and the dump's manifest then said the data were a rehearsal of them.
func refusedBelow(kind string) bool {
	return kind == model.FaultPerturbRank || kind == capture.FaultKeepShard || kind == capture.FaultGatherRows ||
		kind == model.FaultSkipAllReduce || kind == model.FaultVocabPadding
}
