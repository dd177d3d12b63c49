package capture

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
)

// ModelInfoFor describes a loaded model for a dump's manifest: its path
// (as the engine reports it), the sha256 of its config.json bytes (for a
// llama2.c checkpoint, of the config hsdb derives from its header; for the
// embedded model, of its embedded config.json; otherwise of the Dims),
// architecture, every named size, world size, device name and dtype.
func ModelInfoFor(path string, d *model.Dims, world int, device string) ModelInfo {
	mi := ModelInfo{Path: path, Arch: d.Arch, ModelType: d.ModelType, WorldSize: world, Device: device, DType: d.DType.String(), Dims: map[string]int{}}
	if b, _, err := modelpath.ConfigJSON(path); err == nil {
		h := sha256.Sum256(b)
		mi.ConfigSHA256 = hex.EncodeToString(h[:])
		if cd, err := modelpath.DimsFromConfigJSON(b, path); err == nil {
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
