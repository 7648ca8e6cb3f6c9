package testbed

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// listening reports whether process pid itself listens on TCP port on
// the endpoint's host: a listening socket on port in its network
// namespace (read from /proc/PID/net/tcp and tcp6, which show that
// namespace) that is one of pid's open files. Another process's listener
// on the same port and another address (the host's own iperf3 on 5201,
// TestSSHForeignState) is not pid's: taking it for pid's let a client
// connect before its server had bound. Probing this way sends no packet,
// so a one-shot server (iperf3 -1) is not consumed by the check.
func (e *Endpoint) listening(pid, port int) (bool, error) {
	var inodes []string
	for _, f := range []string{"tcp", "tcp6"} {
		data, err := e.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			return false, fmt.Errorf("read sockets of pid %d: %w", pid, err)
		}
		inodes = append(inodes, listeningInodes(data, port)...)
	}
	if len(inodes) == 0 {
		return false, nil
	}
	own, err := opSocketInodes.Call(context.Background(), e, pid)
	if err != nil {
		return false, fmt.Errorf("read open files of pid %d: %w", pid, err)
	}
	for _, ino := range inodes {
		if slices.Contains(own, ino) {
			return true, nil
		}
	}
	return false, nil
}

// opSocketInodes lists the inodes of the sockets process pid has open
// (its /proc/PID/fd links "socket:[INODE]").
var opSocketInodes = NewOp("proc.sockets", func(_ context.Context, _ *Endpoint, pid int) ([]string, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var inodes []string
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes = append(inodes, strings.TrimSuffix(ino, "]"))
		}
	}
	return inodes, nil
})

// listeningIn parses the content of /proc/net/tcp{,6} and reports whether
// a socket listens (state 0A) on port.
func listeningIn(data []byte, port int) bool {
	return len(listeningInodes(data, port)) > 0
}

// listeningInodes parses the content of /proc/net/tcp{,6} and returns the
// inodes of the sockets that listen (state 0A) on port.
func listeningInodes(data []byte, port int) []string {
	want := fmt.Sprintf(":%04X", port)
	var inodes []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		if strings.HasSuffix(f[1], want) && f[3] == "0A" {
			inodes = append(inodes, f[9])
		}
	}
	return inodes
}

// WaitListening waits until process pid listens on TCP port, or fails after
// timeout, or when the process exits first.
func (e *Endpoint) WaitListening(ctx context.Context, pid, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := e.listening(pid, port)
		if err != nil {
			return fmt.Errorf("wait for port %d: %w (did the server exit?)", port, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("wait for port %d: nothing listens after %s", port, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
