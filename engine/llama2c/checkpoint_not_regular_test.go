package llama2c

import (
	"errors"
	"testing"
	"time"

	"hsdb/engine/regfile"
)

// TestCheckpointNotRegular: `hsdb convert llama2c /dev/zero`
// read the device until memory ran out (a crash), and a named pipe as the
// checkpoint waited forever; both are refused at once.
func TestCheckpointNotRegular(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, err := Read("/dev/zero")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, regfile.ErrNotRegular) {
			t.Fatalf("Read(/dev/zero) = %v, want a not-a-regular-file error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read(/dev/zero) still reading after 10 s")
	}
}
