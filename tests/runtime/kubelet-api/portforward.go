package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// forwarder connects each forwarded stream to localhost:port in the pod's network
// namespace, as the kubelet's container runtimes do.
type forwarder struct {
	proc process
}

func (s *server) portForward(w http.ResponseWriter, r *http.Request) {
	namespace, name, uid := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid")
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		writeError(w, errorf(http.StatusBadRequest, "%v", err))
		return
	}
	p, err := s.lookup(namespace, name, uid)
	if err != nil {
		writeError(w, err)
		return
	}
	proc, ok := s.anyProcess(p)
	if !ok {
		writeError(w, errorf(http.StatusBadRequest, "pod %q has no running container: its network namespace cannot be entered", name))
		return
	}
	portforward.ServePortForward(w, r, &forwarder{proc: proc}, name, uid, opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

func (f *forwarder) PortForward(ctx context.Context, name, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	conn, err := dialInNetns(f.proc.pid, fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("pod %q: connecting to port %d: %w", name, port, err)
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(conn, stream)
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(stream, conn)
		done <- struct{}{}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// dialInNetns opens a TCP connection from inside the network namespace of process pid:
// the socket is created by an OS thread that has entered that namespace, and keeps it.
func dialInNetns(pid int, address string) (net.Conn, error) {
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, err
	}
	defer target.Close()
	type result struct {
		conn net.Conn
		err  error
	}
	results := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			results <- result{err: err}
			return
		}
		defer own.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			results <- result{err: fmt.Errorf("entering the pod's network namespace: %w", err)}
			return
		}
		conn, err := net.DialTimeout("tcp4", address, 10*time.Second)
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			// Only a thread back in its own namespace goes back to the pool; otherwise
			// it ends with this goroutine.
			runtime.UnlockOSThread()
		}
		results <- result{conn, err}
	}()
	r := <-results
	return r.conn, r.err
}
