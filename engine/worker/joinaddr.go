package worker

import (
	"net"
	"os"
	"strconv"
)

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
