package worker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// process is a spawned worker: its exit status once it has exited, and the
// tail of its stderr.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	stderr *tail
}

func (f *Front) spawn(rank int) (*process, error) {
	argv := f.cfg.Command
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("starting rank %d's worker: %w", rank, err)
		}
		argv = []string{exe, "worker"}
	}
	args := append(append([]string(nil), argv[1:]...), "--connect", f.ln.Addr().String(), "--rank", strconv.Itoa(rank))
	cmd := exec.Command(argv[0], args...)
	cmd.Env = append(os.Environ(), TokenEnv+"="+f.token, spawnedEnv+"=1")
	p := &process{cmd: cmd, exited: make(chan struct{}), stderr: &tail{f: f, rank: rank}}
	cmd.Stderr = p.stderr
	cmd.Stdout = p.stderr
	cmd.SysProcAttr = workerProcAttr()
	if err := startCmd(cmd); err != nil {
		if why := notExecutable(argv[0]); why != "" {
			return nil, fmt.Errorf("starting rank %d's worker: %s", rank, why)
		}
		return nil, fmt.Errorf("starting rank %d's worker (%s): %w", rank, argv[0], err)
	}
	go func() {
		p.err = cmd.Wait()
		if p.err == nil {
			p.err = errors.New("exit status 0")
		}
		close(p.exited)
	}()
	return p, nil
}

// CheckBinary says, before any worker starts, why bin (--worker-bin: a
// path, or a name looked up on PATH as the start looks it up) cannot be a
// worker's binary: not there ("stat BIN: no such file or directory", or
// exec's "executable file not found in $PATH"), a directory, or a file
// without execute permission (named so, where exec says "permission
// denied" for both). nil when it can be started.
func CheckBinary(bin string) error {
	_, err := exec.LookPath(bin)
	if err == nil {
		return nil
	}
	if why := notExecutable(bin); why != "" {
		return errors.New(why)
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		err = ee.Err
	}
	return fmt.Errorf("--worker-bin %s: %w", bin, err)
}

// notExecutable is why bin, which is there, cannot be started: a
// directory or a file without execute permission; "" otherwise.
func notExecutable(bin string) string {
	st, err := os.Stat(bin)
	if err != nil || !(st.IsDir() || st.Mode()&0o111 == 0) {
		return ""
	}
	what := "a directory"
	if !st.IsDir() {
		what = fmt.Sprintf("not executable (mode %s)", st.Mode())
	}
	return fmt.Sprintf("%s is %s: --worker-bin names the worker's binary (hsdb, or hsdb-cuda-worker for --device cuda)", bin, what)
}

// startCmd starts a worker's command (exec.Cmd.Start); a test replaces
// it to make the start of one rank fail after others have started.
var startCmd = (*exec.Cmd).Start

// reapWait bounds how long endStarted waits for the workers it killed to
// be reaped (SIGKILL ends them at once; a grandchild that left the
// process group yet holds the stderr pipe open would delay Wait).
const reapWait = 5 * time.Second

// endStarted ends what a start that failed (a later rank's worker could
// not be started, a worker exited or did not join in time) brought up:
// the workers it spawned, joined or not (each with its process group),
// and the connections of those that joined, so that none runs on until
// the front exits. It returns once each killed worker has been reaped
// (its Wait returned), or after reapWait.
func endStarted(procs map[int]*process, joined []*remoteRank) {
	for _, r := range joined {
		r.c.close()
	}
	for _, p := range procs {
		p.kill()
	}
	deadline := time.After(reapWait)
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-deadline:
			return
		}
	}
}

// spawnedEnv marks a worker started by a front: it ignores the terminal's
// Ctrl-C, which the front turns into a stop at the next site.
const spawnedEnv = "HSDB_WORKER_SPAWNED"

// Spawned reports whether this process is a worker a front started.
func Spawned() bool { return os.Getenv(spawnedEnv) == "1" }

// tail keeps the last line a worker wrote to stderr (for fault reports)
// and passes every line to the front's log, prefixed with the rank.
type tail struct {
	f    *Front
	rank int
	mu   sync.Mutex
	buf  []byte
	last string
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		line := string(bytes.TrimSpace(t.buf[:i]))
		t.buf = t.buf[i+1:]
		if line != "" {
			line = Printable(line)
			t.last = line
			t.f.note("[rank %d] %s", t.rank, line)
		}
	}
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

// suffix is "; last words: LINE" when the worker wrote any, else "".
func (t *tail) suffix() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	last := t.last
	if last == "" {
		last = Printable(string(bytes.TrimSpace(t.buf)))
	}
	if last == "" {
		return ""
	}
	return "; its last stderr line: " + last
}
