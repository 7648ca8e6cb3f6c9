package testbed

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"
)

// listening reports whether a TCP socket listens on port in the network
// namespace of process pid on the endpoint's host (read from /proc/PID/net/tcp and tcp6, which show
// that process's namespace). Probing this way sends no packet, so a
// one-shot server (iperf3 -1) is not consumed by the check.
func (e *Endpoint) listening(pid, port int) (bool, error) {
	for _, f := range []string{"tcp", "tcp6"} {
		data, err := e.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			return false, fmt.Errorf("read sockets of pid %d: %w", pid, err)
		}
		if listeningIn(data, port) {
			return true, nil
		}
	}
	return false, nil
}

// listeningIn parses the content of /proc/net/tcp{,6} and reports whether
// a socket listens (state 0A) on port.
func listeningIn(data []byte, port int) bool {
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		if strings.HasSuffix(f[1], want) && f[3] == "0A" {
			return true
		}
	}
	return false
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
