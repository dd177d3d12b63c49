package capture

import (
	"os"
	"path/filepath"
	"testing"
)

// TestJSONLChatRow: a --data row in the EAGLE-3 trainers' chat form
// (SpecForge's ShareGPT "conversations", OpenAI's "messages") was refused
// with `a row needs "input_ids" or "text"` alone, which leaves the user to
// guess whether hsdb applies a chat template (it does not) or wants the
// conversation flattened into "text" (which would train on the prompt
// without a chat template). The error now names the key and says to
// render the chat first and give input_ids with a loss_mask. A row of
// neither keeps the short message.
func TestJSONLChatRow(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ line, want string }{
		{`{"id": "a", "conversations": [{"from": "human", "value": "hi"}]}`, `:1: a row needs "input_ids" or "text"; its "conversations" is a chat, which hsdb does not render: apply the model's chat template first`},
		{`{"messages": [{"role": "user", "content": "hi"}]}`, `:1: a row needs "input_ids" or "text"; its "messages" is a chat`},
		{`{"tokens": [1, 2]}`, `:1: a row needs "input_ids" or "text"`},
	} {
		p := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(p, []byte(c.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenJSONL(p, nil, Limits{Vocab: 10})
		if err == nil || len(err.Error()) < len(p+c.want) || err.Error()[:len(p+c.want)] != p+c.want {
			t.Errorf("%s: %v, want it to start %q", c.line, err, p+c.want)
		}
	}
}
