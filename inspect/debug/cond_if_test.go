package debug

import (
	"strings"
	"testing"
)

// TestCondLeadingIfNamed: gdb users write `watch stream if absmax > 5`
// and `condition 1 if nan`. The condition then starts with `if`, which was
// reported as a tensor to be written "absmax(if)" and a command `watch if
// COND`, neither of which exists. The error says that `if` is not taken
// there and shows the form that is.
func TestCondLeadingIfNamed(t *testing.T) {
	for _, tc := range []struct{ src, watched, want string }{
		{"if absmax > 5", "stream", "watch takes no `if`: the condition follows the tensor (watch stream absmax > 500)"},
		{"if nan", "residual", "watch takes no `if`"},
		{"if nan", "", "`if` is not part of the condition: condition N absmax(residual) > 1e4"},
		{"if absmax(residual) > 1", "", "`if` is not part of the condition"},
	} {
		_, err := ParseCond(tc.src, tc.watched)
		if err == nil {
			t.Fatalf("ParseCond(%q, %q) = nil error", tc.src, tc.watched)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "(if)") || strings.Contains(msg, "watch if") {
			t.Errorf("ParseCond(%q, %q): %s\nwant it to contain %q and not name a tensor \"if\"", tc.src, tc.watched, msg, tc.want)
		}
	}
	// `if` elsewhere is still an unknown name, and a well-formed watch parses.
	if _, err := ParseCond("absmax > 5 && if", "stream"); err == nil || strings.Contains(err.Error(), "watch takes no") {
		t.Errorf("`if` after the start: %v", err)
	}
	if _, err := ParseCond("absmax > 5", "stream"); err != nil {
		t.Errorf("watch stream absmax > 5: %v", err)
	}
}
