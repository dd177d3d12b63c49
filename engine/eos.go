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
	var fromConfig []int32
	var cfgSet bool
	for _, name := range []string{"config.json", "generation_config.json"} {
		path := filepath.Join(mp.Dir, name)
		data, err := regfile.ReadFile(path, modelpath.MaxConfigBytes)
		if err != nil {
			if name == "generation_config.json" && errors.Is(err, fs.ErrNotExist) {
				break
			}
			return nil, false, err
		}
		eos, eosSet, err := tokenIDFields(data, path, vocab)
		if err != nil {
			return nil, false, err
		}
		if name == "config.json" {
			fromConfig, cfgSet = eos, eosSet
		} else if eosSet {
			return eos, true, nil // generation_config.json overrides config.json
		}
	}
	return fromConfig, cfgSet, nil
}

// tokenIDFields checks bos_token_id and eos_token_id of one config file
// (the top level, else text_config) and returns eos_token_id's ids.
func tokenIDFields(data []byte, path string, vocab int) (eos []int32, set bool, err error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, false, fmt.Errorf("%s: not a JSON object: %w", path, err)
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
			return nil, false, fmt.Errorf("%s: %s: %w", path, where, err)
		}
		if field == "eos_token_id" {
			eos, set = ids, ok
		}
	}
	return eos, set, nil
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
