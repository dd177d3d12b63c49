package check

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckManyDimsLinear: a safetensors capture whose header declares a
// tensor of 300,000 dimensions of size 1 (a 600 KB header, well within the
// crate's 100 MB bound) is reported in time linear in the header: the
// shape was formatted by string concatenation, quadratic in the number of
// dimensions, and `hsdb check` ran for hours (20,000 dimensions took 3 s,
// 300,000 about 11 minutes). The 20 s guard fails a regression instead of
// hanging the suite; the fixed reader takes well under a second.
func TestCheckManyDimsLinear(t *testing.T) {
	const dims = 300_000
	var sb strings.Builder
	sb.WriteString(`{"hidden_states.1":{"dtype":"F32","shape":[`)
	for i := 0; i < dims; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('1')
	}
	sb.WriteString(`],"data_offsets":[0,4]}}`)
	hdr := sb.String()
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	buf = append(append(buf, hdr...), 0, 0, 0, 0)
	p := filepath.Join(t.TempDir(), "dims.safetensors")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan *Report, 1)
	go func() { done <- CheckFile(p, CheckOptions{}) }()
	select {
	case r := <-done:
		if r == nil {
			t.Fatal("CheckFile returned nil")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("CheckFile of a 300,000-dimension header still running after 20 s")
	}
}
