package quant

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"hsdb/engine/jsonerr"
	"hsdb/engine/model"
)

// Parse returns the scheme config.json's quantization_config raw describes,
// chosen by its quant_method, or nil for an absent or null
// quantization_config (dense weights). An unknown quant_method, or a field
// the scheme does not support, is an error naming the field.
func Parse(raw json.RawMessage) (model.QuantScheme, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if k := jsonerr.Kind(raw); k != "object" {
		return nil, fmt.Errorf("quantization_config is a JSON %s, want a JSON object with quant_method", k)
	}
	var head struct {
		QuantMethod string `json:"quant_method"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("quantization_config: %w", jsonerr.Explain(err))
	}
	switch head.QuantMethod {
	case "fp8":
		return parseFP8(raw)
	case "compressed-tensors":
		return parseCompressed(raw)
	}
	return nil, fmt.Errorf("quantization_config: quant_method %q is not supported (hsdb reads \"fp8\": block-scaled fp8, and \"compressed-tensors\": pack-quantized int4)", head.QuantMethod)
}

// FromConfig returns the scheme of config.json (its bytes): the top-level
// quantization_config, or that of text_config when a multimodal wrapper
// nests the language model there; nil when there is none. Both present
// and different is an error (which one the weights follow is ambiguous).
func FromConfig(configJSON []byte) (model.QuantScheme, error) {
	var top struct {
		Quant      json.RawMessage `json:"quantization_config"`
		TextConfig *struct {
			Quant json.RawMessage `json:"quantization_config"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal(configJSON, &top); err != nil {
		return nil, fmt.Errorf("config.json: %w", jsonerr.Explain(err))
	}
	// Only an absent or null quantization_config means dense weights, at
	// either level: {} is a quantization_config without quant_method, an
	// error from Parse (text_config's {} read as none while the top
	// level's was refused).
	raw := top.Quant
	if top.TextConfig != nil && !absent(top.TextConfig.Quant) {
		if !absent(raw) && !sameJSON(raw, top.TextConfig.Quant) {
			// Which one the weights follow is ambiguous (HF reads the
			// top-level one, the text model was quantized by the other).
			return nil, fmt.Errorf("config.json: quantization_config and text_config.quantization_config differ; keep the one the checkpoint was written with")
		}
		s, err := Parse(top.TextConfig.Quant)
		if err != nil {
			return nil, fmt.Errorf("config.json text_config: %w", err)
		}
		return s, nil
	}
	return Parse(raw)
}

// absent reports whether a quantization_config is missing or null.
func absent(r json.RawMessage) bool {
	s := strings.TrimSpace(string(r))
	return s == "" || s == "null"
}

// sameJSON reports whether two JSON values decode to equal values.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
