package debug

import (
	"fmt"
	"sort"
	"strings"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/safetensors"
	"hsdb/engine/stories"
	"hsdb/engine/tensor"
	"hsdb/inspect/client"
)

// FP8Tensors returns the checkpoint tensors that were stored as fp8
// (float8_e4m3fn with block scales, tensor.QuantFP8Block) and dequantized
// on load, in load order; never the int4 weights of another scheme.
func (s *Session) FP8Tensors() []string {
	n := []string{}
	for _, q := range s.QuantizedTensors() {
		if q.Format == tensor.QuantFP8Block.String() {
			n = append(n, q.Name)
		}
	}
	return n
}

// QuantizedTensors returns every linear weight the checkpoint stores
// quantized, in load order, with its format (engine LoadReport.Formats)
// and the scheme that read it.
func (s *Session) QuantizedTensors() []client.QuantTensor {
	r := s.E.Report
	q := make([]client.QuantTensor, len(r.Dequantized))
	for i, n := range r.Dequantized {
		q[i] = client.QuantTensor{Name: n, Scheme: r.Format}
		if i < len(r.Formats) {
			q[i].Format = r.Formats[i]
		}
	}
	return q
}

// weightDTypes fills WeightDTypes from the checkpoint's headers, the load
// options and the engine's load report.
func (s *Session) weightDTypes() client.WeightDTypes {
	w := client.WeightDTypes{Stored: []client.DTypeCount{}, Kept: []client.DTypeCount{}, Dequantized: len(s.E.Report.Dequantized),
		Unused: append([]string{}, s.E.Report.Unused...)}
	w.QuantFormat = s.E.Report.Format
	stored, packed, err := storedDTypes(s.E.Path, s.E.Tree.Params())
	if err != nil {
		w.Err = err.Error()
	}
	kept := map[tensor.DType]int{}
	w.Packed = packed > 0 && s.Options.Device == "cuda"
	if packed > 0 && !w.Packed { // the CPU backend dequantizes int4 on load
		kept[tensor.F32] += packed
		if s.Options.DType != tensor.Invalid {
			kept = map[tensor.DType]int{s.Options.DType: packed}
		}
	}
	keptAs := func(dt tensor.DType) tensor.DType {
		switch {
		case s.Options.DType != tensor.Invalid:
			return s.Options.DType
		case dt == tensor.F8E4M3 || dt == tensor.F64:
			return tensor.F32
		}
		return dt
	}
	for dt, n := range stored {
		kept[keptAs(dt)] += n
	}
	// The MoE router's e_score_correction_bias is read to the host as
	// float32 whatever --dtype or the checkpoint's dtype (engine/nn
	// loadBias; vLLM keeps it float32): `--dtype bf16` listed it as bf16.
	var bias []model.Param
	for _, p := range s.E.Tree.Params() {
		if strings.HasSuffix(p.Name, ".e_score_correction_bias") {
			bias = append(bias, p)
		}
	}
	if len(bias) > 0 {
		if bs, _, err := storedDTypes(s.E.Path, bias); err == nil {
			for dt, n := range bs {
				k := keptAs(dt)
				kept[k] -= n
				kept[tensor.F32] += n
				if kept[k] == 0 {
					delete(kept, k)
				}
			}
		}
	}
	if s.Options.DType != tensor.Invalid {
		w.Converted = "--dtype " + s.Options.DType.String()
	}
	w.Stored, w.Kept = counts(stored), counts(kept)
	if packed > 0 {
		w.Stored = append(w.Stored, client.DTypeCount{DType: "int4 (packed)", Tensors: packed})
		if w.Packed {
			w.Kept = append(w.Kept, client.DTypeCount{DType: "int4 (packed)", Tensors: packed})
		}
	}
	return w
}

func counts(m map[tensor.DType]int) []client.DTypeCount {
	out := []client.DTypeCount{}
	for dt, n := range m {
		out = append(out, client.DTypeCount{DType: dt.String(), Tensors: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Tensors != out[j].Tensors {
			return out[i].Tensors > out[j].Tensors
		}
		return out[i].DType < out[j].DType
	})
	return out
}

// storedDTypes counts params by the dtype the checkpoint at path stores
// them in, reading only headers: the embedded default model, an HF
// directory (or its config.json), or a llama2.c .bin (float32 throughout).
// A param is looked up under its name in every layout the loader takes
// (model.CheckpointNames: a multimodal wrapper's "language_model." prefix
// as Kimi-K2.5, transformers 5's "model.language_model.", ...); packed counts the weights stored
// as compressed-tensors int4 (<module>.weight_packed). A param the
// checkpoint does not list is not counted.
func storedDTypes(path string, params []model.Param) (out map[tensor.DType]int, packed int, err error) {
	out = map[tensor.DType]int{}
	var info func(string) (tensor.DType, bool)
	mp, err := modelpath.Resolve(path)
	if err != nil {
		return out, 0, fmt.Errorf("%s: cannot read the checkpoint's dtypes: %w", path, err)
	}
	switch mp.Kind {
	case modelpath.KindEmbedded:
		b, err := stories.Files.ReadFile("model/model.safetensors")
		if err != nil {
			return out, 0, fmt.Errorf("%s: %w", path, err)
		}
		f, err := safetensors.FromBytes(path, b)
		if err != nil {
			return out, 0, err
		}
		info = func(n string) (tensor.DType, bool) { ti, ok := f.Info(n); return ti.DType, ok }
	case modelpath.KindLlama2C:
		info = func(string) (tensor.DType, bool) { return tensor.F32, true } // llama2.c's legacy format is float32
	default:
		set, err := safetensors.OpenDir(mp.Dir)
		if err != nil {
			return out, 0, err
		}
		defer set.Close()
		info = func(n string) (tensor.DType, bool) { ti, ok := set.Info(n); return ti.DType, ok }
	}
	for _, p := range params {
		for _, n := range model.CheckpointNames(p.Name) {
			if dt, ok := info(n); ok {
				out[dt]++
				break
			}
			if mod, ok := strings.CutSuffix(n, ".weight"); ok {
				if _, ok := info(mod + ".weight_packed"); ok {
					packed++
					break
				}
			}
		}
	}
	return out, packed, nil
}
