// Package hostmem reports the memory the host can still give a process:
// MemAvailable of Linux's /proc/meminfo (the kernel's estimate of what can
// be allocated without swapping, page cache it can drop included). The
// engine's load plan and check's capture reads compare what they are about
// to hold with it, before reading anything.
package hostmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Available returns MemAvailable in bytes; ok is false where there is no
// /proc/meminfo or it has no readable MemAvailable line (another OS, a
// kernel before 3.14).
func Available() (bytes int64, ok bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || kb < 0 {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}
