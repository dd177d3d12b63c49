package worker

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// workerProcAttr asks Linux to SIGKILL a spawned worker when the front
// that started it is gone (prctl PR_SET_PDEATHSIG through
// SysProcAttr.Pdeathsig), so a worker stopped by SIGSTOP or wedged in a
// kernel is not stranded when hsdb exits at once (a second Ctrl-C, a
// crash). SIGKILL also ends a stopped process. Linux sends it when the OS
// thread that started the worker exits; the front spawns from ordinary
// goroutines, which never end their threads (only a goroutine that exits
// while locked to its thread does), so in practice: when the front exits.
// The worker leads a process group of its own (Setpgid), so that kill
// ends what a wrapper --worker-bin started too; the terminal's Ctrl-C,
// which spawned workers ignore, then no longer reaches them at all.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// kill ends the spawned worker and every process of its group (a wrapper
// script's children included) with SIGKILL.
func (p *process) kill() {
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		p.cmd.Process.Kill()
	}
}

// procState returns the state letter Linux shows for process pid (the
// field after the command name in /proc/PID/stat, proc(5)), 0 when there
// is no such process.
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces and parentheses
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// procStopped reports whether Linux shows process pid stopped by a signal
// or a tracer (state T or t).
func procStopped(pid int) bool {
	s := procState(pid)
	return s == 'T' || s == 't'
}

// procGone reports whether process pid has ended: no such process, or a
// zombie (state Z, X) its parent has yet to reap.
func procGone(pid int) bool {
	s := procState(pid)
	return s == 0 || s == 'Z' || s == 'X'
}
