package inspect

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"hsdb/engine"
)

// ModelInfoOf describes a loaded model for a dump's manifest: its path,
// the sha256 of its config.json bytes (for a llama2.c checkpoint, of the
// config hsdb derives from its header; for the embedded model, of its
// embedded config.json), architecture, every named size, world size,
// device and dtype.
func ModelInfoOf(e *engine.Engine) ModelInfo {
	d := e.Dims
	mi := ModelInfo{Path: e.Path, Arch: d.Arch, ModelType: d.ModelType, WorldSize: e.World, Device: e.Device(0).Name(), DType: d.DType.String(), Dims: map[string]int{}}
	if b, _, err := readConfig(e.Path); err == nil {
		h := sha256.Sum256(b)
		mi.ConfigSHA256 = hex.EncodeToString(h[:])
		if cd, err := dimsFromConfigJSON(b, e.Path); err == nil {
			for k, v := range cd.Named {
				mi.Dims[k] = v
			}
		}
	} else {
		b, _ := json.Marshal(d)
		h := sha256.Sum256(b)
		mi.ConfigSHA256 = hex.EncodeToString(h[:])
	}
	for k, v := range d.Named {
		mi.Dims[k] = v
	}
	mi.Dims["hidden_size"] = d.Hidden
	mi.Dims["num_hidden_layers"] = d.Layers
	mi.Dims["vocab_size"] = d.Vocab
	return mi
}
