//go:build !linux

package worker

import "syscall"

// workerProcAttr is nil off Linux: there is no parent-death signal, and a
// worker notices a lost front when its connection closes.
func workerProcAttr() *syscall.SysProcAttr { return nil }

// procStopped is false off Linux: the front does not read the OS's
// process states there.
func procStopped(int) bool { return false }

// procGone is false off Linux: the front learns of an exit from the
// process's wait alone.
func procGone(int) bool { return false }

// kill ends the spawned worker (off Linux: the process alone).
func (p *process) kill() { p.cmd.Process.Kill() }
