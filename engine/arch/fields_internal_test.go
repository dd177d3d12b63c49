package arch

import (
	"encoding/json"
	"testing"
)

// TestFieldWithoutDefault: a field the config class has no default for
// and gives null no meaning says "missing" when absent and "null" when
// null, never a zero it does not hold.
func TestFieldWithoutDefault(t *testing.T) {
	fields := []field{{name: "hidden_size", kind: "an integer"}}
	for raw, want := range map[string]string{
		`{}`:                    "hidden_size is missing; want an integer (TestConfig has no default for it)",
		`{"hidden_size": null}`: "hidden_size is null; want an integer (TestConfig has no default for it)",
	} {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		_, _, err := applyFields(m, "TestConfig", fields)
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %q", raw, err, want)
		}
	}
	m := map[string]json.RawMessage{"hidden_size": json.RawMessage("96")}
	out, set, err := applyFields(m, "TestConfig", append(fields, size("vocab_size", 32000)))
	if err != nil || string(out["hidden_size"]) != "96" || string(out["vocab_size"]) != "32000" || len(set.defs) != 1 || len(m) != 1 {
		t.Errorf("present and defaulted: %v %v %+v; input now %v", err, out, set, m)
	}
}
