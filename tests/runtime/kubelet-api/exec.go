package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

const (
	// The kubelet's defaults (streamingConnectionIdleTimeout, and the stream creation
	// timeout of its streaming server).
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

// executor runs one exec request's command in the container whose process is `proc`.
type executor struct {
	s    *server
	proc process
}

func (s *server) exec(w http.ResponseWriter, r *http.Request) {
	namespace, name, uid, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid"), r.PathValue("container")
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeError(w, errorf(http.StatusBadRequest, "%v", err))
		return
	}
	p, err := s.lookup(namespace, name, uid)
	if err != nil {
		writeError(w, err)
		return
	}
	if !p.hasContainer(container) {
		writeError(w, errorf(http.StatusNotFound, "container %q not found in pod %q", container, name))
		return
	}
	proc, ok := s.runningProcess(p, container)
	if !ok {
		writeError(w, errorf(http.StatusBadRequest, "container %q in pod %q is not running", container, name))
		return
	}
	command := r.URL.Query()["command"]
	remotecommand.ServeExec(w, r, &executor{s: s, proc: proc}, name, uid, container, command, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// environ is the container process's environment, as it was started.
func environ(pid int) ([]string, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil, err
	}
	var env []string
	for _, kv := range strings.Split(string(raw), "\x00") {
		if kv != "" {
			env = append(env, kv)
		}
	}
	return env, nil
}

// ExecInContainer runs cmd in the container's network, mount and UTS namespaces (through
// nsenter with the container process's PID), in its working directory, with its
// environment.
func (e *executor) ExecInContainer(ctx context.Context, _, _, container string, cmd []string, in io.Reader, out, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if len(cmd) == 0 {
		return fmt.Errorf("no command given")
	}
	env, err := environ(e.proc.pid)
	if err != nil || !e.proc.alive() {
		return fmt.Errorf("container %q is not running", container)
	}
	args := append([]string{"--target", fmt.Sprint(e.proc.pid), "--mount", "--uts", "--net", "--wd", "--"}, cmd...)
	c := exec.Command(e.s.nsenter, args...)
	c.Env = env
	// Output a background child of the command keeps open does not hold the session.
	c.WaitDelay = 2 * time.Second
	var wait func() error
	if tty {
		wait, err = e.startWithTerminal(c, in, out, resize)
	} else {
		wait, err = e.startWithPipes(c, in, out, stderr)
	}
	if err != nil {
		return err
	}
	session := e.s.addSession(c.Process)
	defer e.s.removeSession(session)
	err = wait()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code := exitErr.ExitCode()
		if status, ok := exitErr.Sys().(syscall.WaitStatus); ok && status.Signaled() {
			code = 128 + int(status.Signal())
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		return nil
	}
	return err
}

func (e *executor) startWithPipes(c *exec.Cmd, in io.Reader, out, stderr io.Writer) (func() error, error) {
	if in != nil {
		// A pipe of our own, so that the command's exit ends the session even while the
		// client keeps its stdin open.
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		c.Stdin = r
		go func() {
			_, _ = io.Copy(w, in)
			w.Close()
		}()
		defer r.Close()
	}
	if out != nil {
		c.Stdout = out
	}
	if stderr != nil {
		c.Stderr = stderr
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c.Wait, nil
}

// startWithTerminal gives the command a new pseudo-terminal as its controlling terminal
// (stdin, stdout and stderr); resize events set its window size.
func (e *executor) startWithTerminal(c *exec.Cmd, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) (func() error, error) {
	ptmx, pts, err := openPTY()
	if err != nil {
		return nil, fmt.Errorf("allocating a terminal: %w", err)
	}
	c.Stdin, c.Stdout, c.Stderr = pts, pts, pts
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		ptmx.Close()
		pts.Close()
		return nil, err
	}
	pts.Close()
	go func() {
		for size := range resize {
			_ = unix.IoctlSetWinsize(int(ptmx.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Height, Col: size.Width})
		}
	}()
	if in != nil {
		go func() { _, _ = io.Copy(ptmx, in) }()
	}
	copied := make(chan struct{})
	go func() {
		if out != nil {
			_, _ = io.Copy(out, ptmx)
		} else {
			_, _ = io.Copy(io.Discard, ptmx)
		}
		close(copied)
	}()
	return func() error {
		err := c.Wait()
		// The terminal reads EIO once the command's side is closed and drained.
		select {
		case <-copied:
		case <-time.After(2 * time.Second):
		}
		ptmx.Close()
		return err
	}, nil
}

func openPTY() (*os.File, *os.File, error) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptmx.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ptmx.Close()
		return nil, nil, err
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		ptmx.Close()
		return nil, nil, err
	}
	return ptmx, pts, nil
}

// sessions are the running exec commands, killed when this program stops.
type sessions struct {
	mu   sync.Mutex
	next int
	all  map[int]*os.Process
}

func (s *server) addSession(p *os.Process) int {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	if s.sessions.all == nil {
		s.sessions.all = map[int]*os.Process{}
	}
	s.sessions.next++
	s.sessions.all[s.sessions.next] = p
	return s.sessions.next
}

func (s *server) removeSession(id int) {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	delete(s.sessions.all, id)
}

func (s *server) killSessions() {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	for _, p := range s.sessions.all {
		_ = p.Kill()
	}
}
