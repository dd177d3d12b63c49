package check

import (
	"errors"
	"strings"
	"testing"
)

// TestPickleOddDictItems: DICT or SETITEMS over an odd number of values
// (a key without its value; the fuzzer's testdata/fuzz/FuzzReadTorch/
// 610a8b0404e1beb2) made gopickle index past its slice, a panic the reader
// recovered as "runtime error: index out of range". The scan refuses it
// first, naming the opcode, the count and the byte; pairs still read.
func TestPickleOddDictItems(t *testing.T) {
	for pkl, want := range map[string]string{
		"\x80\x02}q0(B\t\x00\x00\x00000000000u.": "SETITEMS over 1 values (a key without its value) at byte 20",
		"\x80\x02(K\x01K\x02K\x03d.":             "DICT over 3 values (a key without its value) at byte 9",
	} {
		_, err := readTorchBytes(storedArchive([]byte(pkl), nil))
		if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "runtime error") {
			t.Errorf("%q: %v, want an error containing %q", pkl, err, want)
		}
	}
	cf, err := readTorchBytes(storedArchive([]byte("\x80\x02}(K\x01K\x02K\x03K\x04u."), nil))
	if err != nil || cf.Root == nil || len(cf.Root.Keys) != 2 {
		t.Fatalf("SETITEMS over two pairs: %+v, %v", cf, err)
	}
}
