package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/testbed"
)

// The connect and recover tests (docs/measurement.md): UDP requests of
// tunbench's rr probe through the tunnel, answered by "tunbench rr echo"
// on side b.

// echoPort is the UDP port of the echo server.
const echoPort = rr.DefaultEchoPort

// probeInterval is the time between two requests of the probes: the
// resolution of connect's handshake and of recover's times.
const probeInterval = rr.DefaultProbeInterval

// echoServer is "tunbench rr echo" running on an endpoint.
type echoServer struct {
	ep  *testbed.Endpoint
	cmd *testbed.Cmd
	out *bytes.Buffer
}

// startEcho starts the echo server on ep, listening on every address (so
// it may start before the method's addresses exist), and waits until its
// socket is bound.
func startEcho(ctx context.Context, ep *testbed.Endpoint) (*echoServer, error) {
	exe, err := ep.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for rr echo: %w", err)
	}
	argv := []string{exe, "rr", "echo", "--port", strconv.Itoa(echoPort)}
	cmd := ep.Command(ctx, argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := ep.Start(cmd); err != nil {
		return nil, err
	}
	e := &echoServer{ep: ep, cmd: cmd, out: &out}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := udpBound(ep, cmd.Pid(), echoPort)
		if ok {
			return e, nil
		}
		if err != nil || time.Now().After(deadline) || ctx.Err() != nil {
			e.stop()
			return nil, fmt.Errorf("%q: not bound to UDP port %d: %v %s", joinArgs(argv), echoPort, err, trim(out.String()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop ends the echo server at once (it serves until signalled).
func (e *echoServer) stop() {
	if e == nil {
		return
	}
	_ = e.cmd.Signal(syscall.SIGTERM)
	stop(e.ep, e.cmd)
}

// udpBound reports whether a UDP socket of process pid's namespace is
// bound to port (/proc/PID/net/udp and udp6).
func udpBound(ep *testbed.Endpoint, pid, port int) (bool, error) {
	for _, f := range []string{"udp", "udp6"} {
		data, err := ep.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, f))
		if err != nil {
			return false, err
		}
		if udpBoundIn(data, port) {
			return true, nil
		}
	}
	return false, nil
}

// udpBoundIn parses /proc/net/udp{,6} and reports whether a socket is
// bound to local port.
func udpBoundIn(data []byte, port int) bool {
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && strings.HasSuffix(f[1], want) {
			return true
		}
	}
	return false
}

// connectTimeout bounds the wait for the first answer after set-up.
const connectTimeout = 60 * time.Second

// measureConnect runs the probe from side a to the tunnel's address of b
// right after the method's set-up returned (at setupEnd) and returns the
// connect record: setup is the set-up's own duration.
func measureConnect(ctx context.Context, tb *testbed.Pair, path *method.Path, setup time.Duration, setupEnd time.Time) (*result.Connect, error) {
	exe, err := tb.A.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for rr probe: %w", err)
	}
	argv := []string{exe, "rr", "probe", "--addr", path.B.Unmap().String(), "--port", strconv.Itoa(echoPort),
		"--interval", probeInterval.String(), "--timeout", connectTimeout.String()}
	out, err := tb.A.Run(ctx, argv...)
	handshake := time.Since(setupEnd)
	var r rr.ProbeReport
	if jerr := json.Unmarshal(lastLine(out), &r); jerr != nil {
		return nil, fmt.Errorf("rr probe %q: %v: %s", joinArgs(argv), errors.Join(err, jerr), trim(string(out)))
	}
	if r.Error != "" {
		return nil, fmt.Errorf("rr probe: %s", r.Error)
	}
	if err != nil {
		return nil, fmt.Errorf("rr probe: %w", err)
	}
	c := &result.Connect{
		Setup:     setup.Seconds(),
		Handshake: handshake.Seconds(),
		Total:     (setup + handshake).Seconds(),
		Probe:     r.FirstAnswer,
		Probes:    r.Sent,
		Harness:   max(0, handshake.Seconds()-r.FirstAnswer),
		Interval:  r.Interval,
		Tool:      rr.Tool + " probe (UDP)",
	}
	return c, nil
}

// lastLine is the last line of out that holds a JSON object (the
// report; an error follows it on stderr).
func lastLine(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); bytes.HasPrefix(l, []byte("{")) {
			return l
		}
	}
	return nil
}
