package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
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
	ep    *testbed.Endpoint
	cmd   *testbed.Cmd
	argv  []string
	out   *bytes.Buffer
	stdin io.WriteCloser // of an echo server started ahead (startEchoAhead)
	pipe  *io.PipeWriter // its stdout, read for EchoReady and EchoListening
	bound chan struct{}  // closed at EchoListening
}

// startEcho starts the echo server on ep, listening on addr (the
// tunnel's address of ep, never every address of the host), and waits
// until its socket is bound.
func startEcho(ctx context.Context, ep *testbed.Endpoint, addr netip.Addr) (*echoServer, error) {
	exe, err := ep.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for rr echo: %w", err)
	}
	argv := []string{exe, "rr", "echo", "--addr", addr.Unmap().String(), "--port", strconv.Itoa(echoPort)}
	cmd := ep.Command(ctx, argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := ep.Start(cmd); err != nil {
		return nil, err
	}
	e := &echoServer{ep: ep, cmd: cmd, argv: argv, out: &out}
	if err := e.waitBound(ctx); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// waitBound waits until the echo server's socket is bound.
func (e *echoServer) waitBound(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := udpBound(e.ep, e.cmd.Pid(), echoPort)
		if ok {
			return nil
		}
		if err != nil || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%q: not bound to UDP port %d: %v %s", joinArgs(e.argv), echoPort, err, trim(e.out.String()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startEchoAhead starts the echo server on ep before the method's set-up,
// when the address it is to listen on does not exist yet: it waits for
// that address on its standard input (listen), so that it never listens
// on every address of the host.
func startEchoAhead(ctx context.Context, ep *testbed.Endpoint) (*echoServer, error) {
	exe, err := ep.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for rr echo: %w", err)
	}
	argv := []string{exe, "rr", "echo", "--addr-from-stdin", "--port", strconv.Itoa(echoPort)}
	cmd := ep.Command(ctx, argv...)
	e := &echoServer{ep: ep, cmd: cmd, argv: argv, out: &bytes.Buffer{}}
	if e.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, e.out
	ready := make(chan struct{})
	e.bound = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			switch strings.TrimSpace(sc.Text()) {
			case rr.EchoReady:
				close(ready)
				continue
			case rr.EchoListening:
				close(e.bound)
			default:
				continue
			}
			break
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	if err := ep.Start(cmd); err != nil {
		pw.Close()
		return nil, err
	}
	e.pipe = pw
	select {
	case <-ready:
		return e, nil
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	e.stop()
	return nil, fmt.Errorf("%q: not ready within 10s: %s", joinArgs(argv), trim(e.out.String()))
}

// listen tells an echo server started ahead the address to listen on and
// waits until it listens there. Called before the probe is given the
// address, its time counts in the connect record's harness time, not in
// the probe's.
func (e *echoServer) listen(ctx context.Context, addr netip.Addr) error {
	_, err := fmt.Fprintf(e.stdin, "%s\n", addr.Unmap())
	if cerr := e.stdin.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%q: send the address to listen on: %w", joinArgs(e.argv), err)
	}
	select {
	case <-e.bound:
		return nil
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
	return fmt.Errorf("%q: not listening on %s within 5s: %s", joinArgs(e.argv), addr, trim(e.out.String()))
}

// stop ends the echo server at once (it serves until signalled).
func (e *echoServer) stop() {
	if e == nil {
		return
	}
	if e.stdin != nil {
		// cmd.Wait waits for the copy into the process's stdin.
		_ = e.stdin.Close()
	}
	_ = e.cmd.Signal(syscall.SIGTERM)
	stop(e.ep, e.cmd)
	if e.pipe != nil {
		e.pipe.Close()
	}
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

// connectProbe is "tunbench rr probe" started on side a before the
// method's set-up, waiting for the address to probe on its standard
// input, so that only writing that line stands between the set-up's end
// and the first request (not starting a process).
type connectProbe struct {
	ep    *testbed.Endpoint
	cmd   *testbed.Cmd
	argv  []string
	stdin io.WriteCloser
	out   *bytes.Buffer // stderr
	// report receives the report line the moment the probe prints it,
	// with the time it came: the handshake ends there, not when the
	// process has exited.
	report chan probeLine
	pipe   *io.PipeWriter
	done   bool
}

type probeLine struct {
	line []byte
	at   time.Time
}

// startConnectProbe starts the probe on tb's side a.
func startConnectProbe(ctx context.Context, tb *testbed.Pair) (*connectProbe, error) {
	exe, err := tb.A.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for rr probe: %w", err)
	}
	p := &connectProbe{ep: tb.A, out: &bytes.Buffer{}, argv: []string{exe, "rr", "probe", "--addr-from-stdin",
		"--port", strconv.Itoa(echoPort), "--interval", probeInterval.String(), "--timeout", connectTimeout.String()}}
	p.cmd = tb.A.Command(ctx, p.argv...)
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, p.out
	p.report = make(chan probeLine, 1)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			l := bytes.TrimSpace(sc.Bytes())
			if string(l) == rr.ProbeReady {
				close(ready)
				continue
			}
			if bytes.HasPrefix(l, []byte("{")) {
				p.report <- probeLine{bytes.Clone(l), time.Now()}
				break
			}
		}
		close(p.report)
		_, _ = io.Copy(io.Discard, pr)
	}()
	if err := tb.A.Start(p.cmd); err != nil {
		pw.Close()
		return nil, fmt.Errorf("rr probe: %w", err)
	}
	p.pipe = pw
	// Wait until it waits for the address: starting the process is no
	// part of the handshake.
	select {
	case <-ready:
		return p, nil
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	p.stop()
	return nil, fmt.Errorf("rr probe %q: not ready within 10s: %s", joinArgs(p.argv), trim(p.out.String()))
}

// stop ends a probe that was not measured (the set-up failed).
func (p *connectProbe) stop() {
	if p == nil || p.done {
		return
	}
	p.done = true
	_ = p.stdin.Close()
	_ = p.cmd.Kill()
	_ = p.cmd.Wait()
	p.pipe.Close()
	p.ep.Forget(p.cmd)
}

// measure sends the probe the tunnel's address of b right after the
// method's set-up returned (at setupEnd) and returns the connect record:
// setup is the set-up's own duration.
func (p *connectProbe) measure(path *method.Path, setup time.Duration, setupEnd time.Time) (*result.Connect, error) {
	_, werr := fmt.Fprintf(p.stdin, "%s\n", path.B.Unmap())
	_ = p.stdin.Close()
	got, ok := <-p.report
	handshake := got.at.Sub(setupEnd)
	err := errors.Join(werr, p.cmd.Wait())
	p.pipe.Close()
	p.ep.Forget(p.cmd)
	p.done = true
	if !ok {
		return nil, fmt.Errorf("rr probe %q: no report: %v: %s", joinArgs(p.argv), err, trim(p.out.String()))
	}
	out := got.line
	var r rr.ProbeReport
	if jerr := json.Unmarshal(lastLine(out), &r); jerr != nil {
		return nil, fmt.Errorf("rr probe %q: %v: %s %s", joinArgs(p.argv), errors.Join(err, jerr), trim(string(out)), trim(p.out.String()))
	}
	if r.Error != "" {
		return nil, fmt.Errorf("rr probe: %s", r.Error)
	}
	if err != nil {
		return nil, fmt.Errorf("rr probe: %w", err)
	}
	return &result.Connect{
		Setup:     setup.Seconds(),
		Handshake: handshake.Seconds(),
		Total:     (setup + handshake).Seconds(),
		Probe:     r.FirstAnswer,
		Probes:    r.Sent,
		Harness:   max(0, handshake.Seconds()-r.FirstAnswer),
		Interval:  r.Interval,
		Tool:      rr.Tool + " probe (UDP)",
	}, nil
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
