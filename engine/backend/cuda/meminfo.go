//go:build cuda

package cuda

import (
	"errors"
	"fmt"
)

// MemInfo returns the name of the rank's GPU ("cuda:0"; ranks on the same
// GPU share it) and the driver's free and total bytes of that GPU, all
// processes included (cuMemGetInfo), so that a loader can check its memory
// plan before uploading any weight.
func (d *Device) MemInfo() (name string, free, total int64, err error) {
	if d.g == nil {
		return "", 0, 0, errors.New("cuda: MemInfo: no GPU behind this device")
	}
	free, total, err = d.g.MemInfo()
	return fmt.Sprintf("cuda:%d", d.g.Ordinal()), free, total, err
}
