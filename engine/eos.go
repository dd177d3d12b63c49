package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"hsdb/engine/modelpath"
	"hsdb/engine/regfile"
)

// EOSIDs returns the token ids at which greedy generation ends, as HF
// transformers' generate reads them: generation_config.json's
// eos_token_id when the model directory has that file and the field is
// set, else config.json's (GenerationConfig.from_model_config; a nested
// text_config is read when the top level has none). A field may be an
// int or a list of ints; absent or null means unset. found is false when
// neither file sets it, and always for the embedded model and llama2.c
// checkpoints (no HF configs: run.c stops at BOS). bos_token_id in both
// files is checked the same way. Errors name the file and the field: an
// id that is negative, not below vocab (the model's vocab_size), not an
// integer, or an empty list.
func EOSIDs(modelPath string, vocab int) (ids []int32, found bool, err error) {
	mp, err := modelpath.Resolve(modelPath)
	if err != nil || mp.Kind != modelpath.KindHF {
		return nil, false, err
	}
	_, eos, err := hfTokenIDs(mp.Dir, vocab)
	return eos.ids, eos.set, err
}

// BOSID returns the token id HF transformers' generate starts from when
// it is given no input ids (GenerationMixin.
// _maybe_initialize_input_ids_for_generation: a [1, 1] tensor of
// generation_config's bos_token_id, and a ValueError "`bos_token_id` has
// to be defined when no `input_ids` are provided" without one), read as
// EOSIDs reads eos_token_id: generation_config.json's when the model
// directory has that file and it sets the field, else config.json's (or
// its text_config's). A llama2.c checkpoint's and the embedded model's is
// their config's (run.c's BOS 1). found is false when no file sets it.
// Errors name the file and the field: EOSIDs's (an id outside [0, vocab),
// not an integer, an empty list), and a list of more than one id, which is
// no single id to start from.
func BOSID(modelPath string, vocab int) (id int32, found bool, err error) {
	mp, err := modelpath.Resolve(modelPath)
	if err != nil {
		return -1, false, err
	}
	var bos tokenIDField
	if mp.Kind == modelpath.KindHF {
		bos, _, err = hfTokenIDs(mp.Dir, vocab)
	} else { // the config hsdb gives it: no generation_config.json
		data, where, cerr := modelpath.ConfigJSON(modelPath)
		if cerr != nil {
			return -1, false, cerr
		}
		bos, _, err = tokenIDFields(data, where, vocab)
	}
	switch {
	case err != nil:
		return -1, false, err
	case !bos.set:
		return -1, false, nil
	case len(bos.ids) > 1:
		return -1, false, fmt.Errorf("%s: %s: a list of %d ids %v: generation starts from one BOS id; give the prompt's ids with --ids", bos.file, bos.field, len(bos.ids), bos.ids)
	}
	return bos.ids[0], true, nil
}

// tokenIDField is one of bos_token_id and eos_token_id as a config file
// sets it: its ids, whether it is set (not absent nor null), and where
// (the file, and the field's name: "text_config."+name when read there).
type tokenIDField struct {
	ids         []int32
	set         bool
	file, field string
}

// hfTokenIDs returns bos_token_id and eos_token_id of the HF model
// directory dir as transformers' GenerationConfig reads them: each from
// generation_config.json where that file exists and sets it, else from
// config.json (GenerationConfig.from_model_config). Both fields of both
// files are checked (tokenIDFields).
func hfTokenIDs(dir string, vocab int) (bos, eos tokenIDField, err error) {
	for _, name := range []string{"config.json", "generation_config.json"} {
		path := filepath.Join(dir, name)
		data, err := regfile.ReadFile(path, modelpath.MaxConfigBytes)
		if err != nil {
			if name == "generation_config.json" && errors.Is(err, fs.ErrNotExist) {
				break
			}
			return bos, eos, err
		}
		b, e, err := tokenIDFields(data, path, vocab)
		if err != nil {
			return bos, eos, err
		}
		if name == "config.json" || b.set { // generation_config.json overrides config.json
			bos = b
		}
		if name == "config.json" || e.set {
			eos = e
		}
	}
	return bos, eos, nil
}

// tokenIDFields checks bos_token_id and eos_token_id of one config file
// (the top level, else text_config) and returns them.
func tokenIDFields(data []byte, path string, vocab int) (bos, eos tokenIDField, err error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return bos, eos, fmt.Errorf("%s: not a JSON object: %w", path, err)
	}
	var inner map[string]json.RawMessage
	if tc, ok := raw["text_config"]; ok && json.Unmarshal(tc, &inner) != nil {
		inner = nil
	}
	for _, field := range []string{"bos_token_id", "eos_token_id"} {
		v, where := raw[field], field
		if isNull(v) && inner != nil {
			v, where = inner[field], "text_config."+field
		}
		ids, ok, err := parseTokenIDs(v, vocab)
		if err != nil {
			return bos, eos, fmt.Errorf("%s: %s: %w", path, where, err)
		}
		f := tokenIDField{ids: ids, set: ok, file: path, field: where}
		if field == "bos_token_id" {
			bos = f
		} else {
			eos = f
		}
	}
	return bos, eos, nil
}

func isNull(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) == 0 || string(v) == "null"
}

// parseTokenIDs reads an int or a list of ints, each in [0, vocab).
func parseTokenIDs(v json.RawMessage, vocab int) ([]int32, bool, error) {
	if isNull(v) {
		return nil, false, nil
	}
	var list []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, false, fmt.Errorf("want an integer or a list of integers: %w", err)
		}
		if len(list) == 0 {
			return nil, false, fmt.Errorf("an empty list: want an integer or a list of integers")
		}
	} else {
		list = []json.RawMessage{v}
	}
	ids := make([]int32, 0, len(list))
	for _, item := range list {
		item = bytes.TrimSpace(item)
		if len(item) == 0 || (item[0] != '-' && (item[0] < '0' || item[0] > '9')) {
			return nil, false, fmt.Errorf("%s is not an integer token id", item)
		}
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(item))
		d.UseNumber()
		if err := d.Decode(&n); err != nil {
			return nil, false, fmt.Errorf("%s is not an integer token id", item)
		}
		i, err := n.Int64()
		if err != nil {
			return nil, false, fmt.Errorf("%s is not an integer token id", n)
		}
		if i < 0 || i >= int64(vocab) {
			return nil, false, fmt.Errorf("token id %d is outside the vocabulary [0, %d) (vocab_size)", i, vocab)
		}
		ids = append(ids, int32(i))
	}
	return ids, true, nil
}
