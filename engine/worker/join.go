package worker

// What a joining worker is told: the address to dial and the model path.

import (
	"net"
	"os"
	"path/filepath"
	"strconv"

	"hsdb/engine/modelpath"
)

// absModel is the model path a worker is sent: a relative path made
// absolute against the front's working directory, since a joined worker
// runs in a directory of its own (a launcher's, another host's over a
// shared filesystem); "" and the embedded model as they are.
func absModel(path string) string {
	if path == "" || path == modelpath.Embedded || filepath.IsAbs(path) {
		return path
	}
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

// Addr returns the address workers join at: the listener's, or with a
// listener on every interface (--listen :7070, 0.0.0.0:7070) this host's
// name and the port, which a worker on another host can dial (the
// wildcard address cannot be).
func (f *Front) Addr() string {
	a, ok := f.ln.Addr().(*net.TCPAddr)
	if !ok || !a.IP.IsUnspecified() {
		return f.ln.Addr().String()
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return f.ln.Addr().String()
	}
	return net.JoinHostPort(host, strconv.Itoa(a.Port))
}
