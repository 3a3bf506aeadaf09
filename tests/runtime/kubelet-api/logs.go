package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// logOptions are the query parameters of /containerLogs (v1.PodLogOptions).
type logOptions struct {
	follow, previous bool
	tailLines        int64 // -1: all
	limitBytes       int64 // -1: no limit
}

// parseLogOptions accepts what the runtime's logs can answer and refuses the rest with a
// reason: the log files hold stdout and stderr together, without a time per line.
func parseLogOptions(r *http.Request) (logOptions, error) {
	q := r.URL.Query()
	opts := logOptions{tailLines: -1, limitBytes: -1}
	boolean := func(name string) (bool, error) {
		v := q.Get(name)
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, errorf(http.StatusBadRequest, "%s=%q is not a boolean", name, v)
		}
		return b, nil
	}
	var err error
	if opts.follow, err = boolean("follow"); err != nil {
		return opts, err
	}
	if opts.previous, err = boolean("previous"); err != nil {
		return opts, err
	}
	timestamps, err := boolean("timestamps")
	if err != nil {
		return opts, err
	}
	if timestamps {
		return opts, errorf(http.StatusBadRequest, "timestamps are not supported by flink-local-runtime: its container logs have no time per line")
	}
	if q.Get("sinceSeconds") != "" || q.Get("sinceTime") != "" {
		return opts, errorf(http.StatusBadRequest, "sinceSeconds and sinceTime are not supported by flink-local-runtime: its container logs have no time per line")
	}
	if stream := q.Get("stream"); stream != "" && stream != "All" {
		return opts, errorf(http.StatusBadRequest, "stream=%s is not supported by flink-local-runtime: stdout and stderr are logged together (only All)", stream)
	}
	number := func(name string) (int64, error) {
		v := q.Get(name)
		if name == "tailLines" && v == "" {
			// The kubelet's backwards-compatible alias.
			v = q.Get("tail")
			if v == "all" {
				v = ""
			}
		}
		if v == "" {
			return -1, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || (name == "limitBytes" && n == 0) {
			return 0, errorf(http.StatusUnprocessableEntity, "%s=%q is not a valid value", name, v)
		}
		return n, nil
	}
	if opts.tailLines, err = number("tailLines"); err != nil {
		return opts, err
	}
	if opts.limitBytes, err = number("limitBytes"); err != nil {
		return opts, err
	}
	return opts, nil
}

// logInstance tells which start of the container the request is about (its restart
// number, the name of its log file), following the kubelet's rules
// (validateContainerLogStatus), and whether that start is the one running now.
func logInstance(p *pod, container string, previous bool) (int, bool, error) {
	status, ok := p.containerStatus(container)
	if !ok {
		return 0, false, errorf(http.StatusBadRequest, "container %q in pod %q is not available", container, p.Metadata.Name)
	}
	switch {
	case previous:
		if status.LastState.Terminated == nil {
			return 0, false, errorf(http.StatusBadRequest, "previous terminated container %q in pod %q not found", container, p.Metadata.Name)
		}
		// Waiting for a restart: the last termination is the current restart number's;
		// running or terminated again: the one before.
		if status.State.Waiting != nil {
			return status.RestartCount, false, nil
		}
		return status.RestartCount - 1, false, nil
	case status.State.Running != nil:
		return status.RestartCount, true, nil
	case status.State.Terminated != nil, status.LastState.Terminated != nil:
		return status.RestartCount, false, nil
	case status.State.Waiting != nil && status.State.Waiting.Reason != "":
		return 0, false, errorf(http.StatusBadRequest, "container %q in pod %q is waiting to start: %s", container, p.Metadata.Name, status.State.Waiting.Reason)
	default:
		return 0, false, errorf(http.StatusBadRequest, "container %q in pod %q is waiting to start - no logs yet", container, p.Metadata.Name)
	}
}

func (s *server) containerLogs(w http.ResponseWriter, r *http.Request) {
	namespace, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	opts, err := parseLogOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	p, err := s.lookup(namespace, name, "")
	if err != nil {
		writeError(w, err)
		return
	}
	if !p.hasContainer(container) {
		writeError(w, errorf(http.StatusNotFound, "container %q not found in pod %q", container, name))
		return
	}
	restart, current, err := logInstance(p, container, opts.previous)
	if err != nil {
		writeError(w, err)
		return
	}
	// The process to follow: only while the requested start is the one running.
	var proc process
	follow := false
	if opts.follow && current {
		proc, follow = s.runningProcess(p, container)
	}
	path := filepath.Join(s.dir(p), "logs", container, fmt.Sprintf("%d.log", restart))
	file, err := os.Open(path)
	if err != nil {
		writeError(w, errorf(http.StatusBadRequest, "the log of container %q in pod %q (start %d) is not available: %v", container, name, restart, err))
		return
	}
	defer file.Close()
	offset, end, err := tailOffset(file, opts.tailLines)
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "reading %s: %v", path, err))
		return
	}
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "reading %s: %v", path, err))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	out := &limitedWriter{w: w, left: opts.limitBytes}
	// Without follow, the answer is the file as it was when its tail was found: a line
	// written meanwhile would make `--tail=N` return N+1 lines.
	var source io.Reader = file
	if !follow {
		source = io.LimitReader(file, end-offset)
	}
	buf := make([]byte, 32*1024)
	for {
		n, err := source.Read(buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return
		}
		if !follow {
			return
		}
		// At the end of the file: wait for more, and end once the process has exited
		// and what it wrote last has been sent.
		if !proc.alive() {
			follow = false
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tailOffset is where the last `lines` lines of the file start (0 for all), and where
// the file ended when they were counted.
func tailOffset(file *os.File, lines int64) (int64, int64, error) {
	info, err := file.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := info.Size()
	switch {
	case lines < 0:
		return 0, size, nil
	case lines == 0:
		return size, size, nil
	}
	// Walk back from the end counting line ends; a last line without one counts too.
	const block = 64 * 1024
	buf := make([]byte, block)
	pos := size
	found := int64(0)
	first := true
	for pos > 0 {
		n := int64(block)
		if pos < n {
			n = pos
		}
		pos -= n
		if _, err := file.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		chunk := buf[:n]
		if first {
			first = false
			if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				chunk = chunk[:len(chunk)-1]
			}
		}
		for {
			i := bytes.LastIndexByte(chunk, '\n')
			if i < 0 {
				break
			}
			found++
			if found == lines {
				return pos + int64(i) + 1, size, nil
			}
			chunk = chunk[:i]
		}
	}
	return 0, size, nil
}

// limitedWriter writes at most `left` bytes (all with -1), then refuses.
type limitedWriter struct {
	w    io.Writer
	left int64
}

var errLimit = errors.New("limitBytes reached")

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.left < 0 {
		return l.w.Write(p)
	}
	if l.left == 0 {
		return 0, errLimit
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var se *statusError
	if errors.As(err, &se) {
		code = se.code
	}
	http.Error(w, err.Error(), code)
}
