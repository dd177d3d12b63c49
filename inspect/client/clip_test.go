package client

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClipMessage: messages up to MaxMessageBytes are kept whole; a longer
// one is cut at rune boundaries. "a" + 2000 × "€" (3 bytes each) is 6001
// bytes: byte 3072 is inside a "€" (3071 % 3 = 2), so the head ends at
// 3070; byte 6001-512 = 5489 too (5488 % 3 = 1), so the tail starts at
// 5491: 2421 bytes left out, by hand.
func TestClipMessage(t *testing.T) {
	short := strings.Repeat("x", MaxMessageBytes)
	if got := ClipMessage(short); got != short {
		t.Errorf("a message of %d bytes was clipped", len(short))
	}
	msg := "a" + strings.Repeat("€", 2000)
	got := ClipMessage(msg)
	want := msg[:3070] + "… [2421 bytes left out] …" + msg[5491:]
	if got != want || !utf8.ValidString(got) {
		t.Errorf("clipped to %d bytes (valid UTF-8 %v), want %d", len(got), utf8.ValidString(got), len(want))
	}
}
