package tokenizer

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestSentencePiecePiecesBounded: a tokenizer.model of 100 MB holding 50
// million empty pieces (two bytes each: field 1, length 0) took 5.9 GB
// and 48 s before it was refused for its model_type; the pieces are now
// counted before any is decoded and more than MaxTokenID + 1 (here a
// lowered bound of 300) are refused with next to nothing allocated, and
// the slice of a model within the bound is made once.
func TestSentencePiecePiecesBounded(t *testing.T) {
	old := maxSPPieces
	maxSPPieces = 300
	defer func() { maxSPPieces = old }()
	data := bytes.Repeat([]byte{0x0a, 0x00}, 1_000_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := parseSPModel(data)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "ModelProto has more than 300 pieces") {
		t.Fatalf("a million pieces, bound 300: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("refusing a million pieces allocated %d bytes, want under 64 KiB", got)
	}
	m, err := parseSPModel(bytes.Repeat([]byte{0x0a, 0x00}, 300))
	if err != nil || len(m.pieces) != 300 || cap(m.pieces) != 300 {
		t.Fatalf("300 pieces, bound 300: %v (%d pieces, capacity %d)", err, len(m.pieces), cap(m.pieces))
	}
}
