package debug

import "testing"

// TestInputFileChatRow: a row in the EAGLE-3 trainers' chat form
// (SpecForge's "conversations", OpenAI's "messages") was refused by
// `input file` with `want {"text": ...} or {"input_ids": [...]}` alone,
// while `hsdb capture --data` named the chat and said to render it first
// (TestJSONLChatRow): the debugger now says the same.
func TestInputFileChatRow(t *testing.T) {
	for _, c := range []struct{ row, key string }{
		{`{"conversations": [{"from": "human", "value": "hi"}]}`, "conversations"},
		{`{"messages": [{"role": "user", "content": "hi"}]}`, "messages"},
	} {
		want := `want {"text": ...} or {"input_ids": [...]}; its "` + c.key + `" is a chat, which hsdb does not render: apply the model's chat template first (as SpecForge's and speculators' data preparation do) and give "input_ids"`
		if _, _, _, err := parseJSONLRecord([]byte(c.row)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", c.row, err, want)
		}
	}
	if _, _, _, err := parseJSONLRecord([]byte(`{"prompt": "hi"}`)); err == nil || err.Error() != `want {"text": ...} or {"input_ids": [...]}` {
		t.Errorf("a row of neither: %v", err)
	}
}
