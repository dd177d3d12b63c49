package safetensors

import (
	"errors"
	"strings"
	"testing"
)

// TestHeaderLoneSurrogateName: a tensor name written with a lone UTF-16
// surrogate escape ("w\ud800") is refused naming the escape and its
// offset, as the Rust crate (serde_json) refuses it; encoding/json turned
// it into "w\ufffd" and the file opened with a tensor of another name than
// the one written (two such names, "\ud800" and "\ud801", collapsed into
// one).
func TestHeaderLoneSurrogateName(t *testing.T) {
	hdr := `{"w\ud800":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	_, err := Open(writeTemp(t, "lone.safetensors", stFile(hdr, make([]byte, 4))))
	if !errors.Is(err, ErrHeaderJSON) || !strings.Contains(err.Error(), `lone surrogate \ud800 at byte 3`) {
		t.Fatalf("Open = %v; want ErrHeaderJSON naming the lone surrogate at byte 3", err)
	}
	// A surrogate pair is a character (U+1F600) and opens.
	f, err := Open(writeTemp(t, "pair.safetensors", stFile(`{"w\ud83d\ude00":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4))))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, ok := f.Info("w😀"); !ok {
		t.Fatalf("names %v, want w😀", f.Names())
	}
}
