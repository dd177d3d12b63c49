package model_test

import (
	"encoding/json"
	"errors"
	"testing"

	"hsdb/engine/model"
)

// TestBoundsNameTheJSONType: a size written as another JSON type is called
// by that type ("got a JSON string"), not "out of range", and every range
// an error states is the one accepted: a size no architecture can take as
// 0 says "from 1" (0 is refused with that range), one where 0 means none
// says "from 0" and accepts 0.
func TestBoundsNameTheJSONType(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"hidden_size": "96"}`, `config.json: hidden_size: got a JSON string "96", want an integer from 1 to 262144`},
		{`{"hidden_size": true}`, `config.json: hidden_size: got a JSON boolean true, want an integer from 1 to 262144`},
		{`{"hidden_size": [96]}`, `config.json: hidden_size: got a JSON array, want an integer from 1 to 262144`},
		{`{"vocab_size": {"n": 1}}`, `config.json: vocab_size: got a JSON object, want an integer from 1 to 16777216`},
		{`{"hidden_size": 0}`, `config.json: hidden_size 0 is out of range (want an integer from 1 to 262144)`},
		{`{"num_key_value_heads": 0}`, `config.json: num_key_value_heads 0 is out of range (want an integer from 1 to 4096)`},
		{`{"q_lora_rank": 0}`, `config.json: q_lora_rank 0 is out of range (want an integer from 1 to 65536)`},
		{`{"n_shared_experts": -1}`, `config.json: n_shared_experts -1 is out of range (want an integer from 0 to 256)`},
		{`{"hidden_size": 96.5}`, `config.json: hidden_size 96.5 is not an integer (want an integer from 1 to 262144)`},
		{`{"hidden_size": "0123456789012345678901234567890123456789012"}`,
			`config.json: hidden_size: got a JSON string "012345678901234567890123456789012345678... (45 bytes), want an integer from 1 to 262144`},
		{`{"n_shared_experts": 0, "first_k_dense_replace": 0, "max_window_layers": 0, "sliding_window": 0, "num_nextn_predict_layers": 0}`, ""},
		{`{"hidden_size": null, "num_hidden_layers": null}`, ""}, // null is the architecture's to judge
	} {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.json), &raw); err != nil {
			t.Fatal(err)
		}
		err := model.CheckBounds(raw, "config.json")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", c.json, err)
		case c.want != "" && (err == nil || err.Error() != c.want || !errors.Is(err, model.ErrConfigLimit)):
			t.Errorf("%s: err = %v\nwant %q", c.json, err, c.want)
		}
	}
}
