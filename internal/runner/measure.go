package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/sample"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Ports of the load tools inside the testbed.
const (
	iperf3Port   = 5201
	sockperfPort = load.SockperfDefaultPort
)

var errLatencyUnsupported = errors.New("latency not measured")

// measureThroughput runs one iperf3 test from path.A to path.B while the
// CPU sampler runs, and reports live throughput from the sender's device
// counters.
func measureThroughput(ctx context.Context, tb *testbed.Pair, path *method.Path, p result.Params, prog *progress) (*result.Throughput, *result.CPU, *span, error) {
	var sp span
	thr, cpu, err := measureThroughputSpan(ctx, tb, path, p, prog, &sp)
	return thr, cpu, &sp, err
}

func measureThroughputSpan(ctx context.Context, tb *testbed.Pair, path *method.Path, p result.Params, prog *progress, sp *span) (*result.Throughput, *result.CPU, error) {
	dur := time.Duration(p.Duration * float64(time.Second))
	omit := time.Duration(p.Omit * float64(time.Second))
	// Bound the whole test: a hung tool must not hang the run.
	ctx, cancel := context.WithTimeout(ctx, dur+omit+30*time.Second)
	defer cancel()

	srv, srvOut, err := startServer(ctx, tb.B, load.Iperf3Server{Bind: path.B, Port: iperf3Port}.Args(), iperf3Port)
	if err != nil {
		return nil, nil, fmt.Errorf("iperf3 server: %w", err)
	}
	defer stop(tb.B, srv)

	sampler := newCPUSampler(tb, p.Direction)
	track := func(ep *testbed.Endpoint, role, side string, pid int) error {
		if err := sampler.TrackProcess(ep, role, side, pid); err != nil {
			return fmt.Errorf("account cpu of %s: %w", role, err)
		}
		return nil
	}
	aSide, bSide := sides(p.Direction)
	if err := track(tb.B, "iperf3-server", bSide, srv.Pid()); err != nil {
		return nil, nil, err
	}
	if err := trackDaemons(sampler, tb, path, p.Direction); err != nil {
		return nil, nil, err
	}

	// The sampler starts after the warm-up, so CPU covers the measured
	// seconds only. Without a warm-up it starts before the client: its
	// start reads every tracked process (over an agent, on a remote
	// host), and on a loaded host that took longer than a short
	// transfer, after which the one-test server had exited and the
	// repetition failed. The client, tracked once started, is then
	// measured from its first moment.
	w := &window{tb: tb, sampler: sampler, live: tb.A, prog: prog, span: sp}
	early := omit == 0
	if early {
		w.begin(ctx, 0)
	}
	client := load.Iperf3Client{Server: path.B, Port: iperf3Port, Duration: dur, Omit: omit, Streams: p.Streams,
		Reverse: p.Direction == scenario.DirReverse, Bidir: p.Direction == scenario.DirBidir, MSS: p.MSS, Congestion: p.CongestionControl}
	cmd := tb.A.Command(ctx, path.Wrap(client.Args())...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := tb.A.Start(cmd); err != nil {
		_, _ = w.end()
		return nil, nil, fmt.Errorf("iperf3 client: %w", err)
	}
	if err := track(tb.A, "iperf3-client", aSide, cmd.Pid()); err != nil {
		// A client gone before it could be tracked has usually failed
		// at once (no route, refused): its own error says why, which
		// the tracking error alone hides. Over an agent on a loaded
		// host the tracking can also come after a short test's end.
		_, _ = w.end()
		if errors.Is(err, fs.ErrNotExist) {
			waitErr := cmd.Wait()
			tb.A.Forget(cmd)
			how := "it had finished: " + iperf3Outcome(out.Bytes(), waitErr, errOut.String())
			return nil, nil, fmt.Errorf("%w (the client exited before its CPU could be read; %s)", err, how)
		}
		return nil, nil, err
	}
	if !early {
		w.begin(ctx, omit)
	}
	waitErr := cmd.Wait()
	tb.A.Forget(cmd)
	sampler.Exited(tb.A, cmd)
	cpu, cpuErr := w.end()

	thr, parseErr := load.ParseIperf3(out.Bytes())
	if parseErr != nil {
		if ctx.Err() != nil {
			return nil, cpu, fmt.Errorf("iperf3 did not finish: %w", context.Cause(ctx))
		}
		if crashed(waitErr) {
			return nil, cpu, fmt.Errorf("%s: iperf3 client (pid %d) %v mid-test (stderr: %s; server: %s)",
				tb.A.Side, cmd.Pid(), waitErr, trim(errOut.String()), trim(srvOut.String()))
		}
		return nil, cpu, fmt.Errorf("iperf3 client %q: %w (stderr: %s; server: %s)",
			joinArgs(cmd.Args), parseErr, trim(errOut.String()), trim(srvOut.String()))
	}
	if waitErr != nil {
		return thr, cpu, fmt.Errorf("iperf3 client %q: %w: %s", joinArgs(cmd.Args), waitErr, trim(errOut.String()))
	}
	return thr, cpu, cpuErr
}

// iperf3Outcome says in a few words how an iperf3 client ended: its
// parse error or exit status and its standard error, or that its result
// was complete.
func iperf3Outcome(out []byte, waitErr error, stderr string) string {
	if _, err := load.ParseIperf3(out); err != nil {
		if waitErr != nil {
			return fmt.Sprintf("%v, %v (stderr: %s)", waitErr, err, trim(stderr))
		}
		return fmt.Sprintf("%v (stderr: %s)", err, trim(stderr))
	}
	if waitErr != nil {
		return fmt.Sprintf("%v with a complete result (stderr: %s)", waitErr, trim(stderr))
	}
	return "with a complete result, so the tracking came after the test's end"
}

// nothingReceived is the error of a throughput test (test: tcp_stream,
// parallel) whose iperf3 finished without an error but whose receivers
// got no byte (received, over the dur seconds measured, warm-up excluded)
// over method: the path carried nothing, which is a fault, not a
// throughput of zero (docs/measurement.md). It is nil when something was
// received. The error carries what the sender reported, which tells a
// path that lost all it was given (a sender rate, retransmits) from a
// sender that sent nothing.
func nothingReceived(test string, received int64, senderBps float64, retransmits int64, dur float64, method string) error {
	if received > 0 {
		return nil
	}
	d := time.Duration(dur * float64(time.Second)).String()
	return fmt.Errorf("%s: iperf3 received 0 bytes in %s over %s: the sender reported %.2f Mbit/s and %d retransmits, so the path carried nothing",
		test, d, method, senderBps/1e6, retransmits)
}

// live feeds the progress line with the sender's transmit rate.
func live(ep *testbed.Endpoint, stopc <-chan struct{}, prog *progress) {
	prev, err := sample.LinkCounters(ep.NL, ep.Dev)
	if err != nil {
		return
	}
	last := time.Now()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stopc:
			return
		case now := <-t.C:
			cur, err := sample.LinkCounters(ep.NL, ep.Dev)
			if err != nil {
				return
			}
			_, tx := sample.Rate(prev, cur, now.Sub(last))
			prog.live(tx)
			prev, last = cur, now
		}
	}
}

// measureLatency runs a request/response test from path.A to path.B with
// the scenario's latency tool.
func measureLatency(ctx context.Context, tb *testbed.Pair, path *method.Path, p result.Params) (*result.Latency, error) {
	dur := time.Duration(p.Latency * float64(time.Second))
	ctx, cancel := context.WithTimeout(ctx, dur+30*time.Second)
	defer cancel()
	if p.LatencyTool == "sockperf" {
		return sockperfLatency(ctx, tb, path, dur)
	}
	if len(path.ClientWrap) > 0 {
		// Validation refuses it (method.TestChecker): rr is Go, which
		// makes its system calls itself, past an LD_PRELOAD wrapper.
		return nil, fmt.Errorf("rr cannot run under %s (the method's client wrapper): use latency_tool: sockperf", path.ClientWrap[0])
	}
	bexe, err := tb.B.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for rr: %w", err)
	}
	aexe, err := tb.A.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for rr: %w", err)
	}
	srv, _, err := startServer(ctx, tb.B, load.RRServer{Bind: path.B, Port: load.RRDefaultPort, Exe: bexe, Congestion: p.CongestionControl}.Args(), load.RRDefaultPort)
	if err != nil {
		return nil, fmt.Errorf("rr server: %w", err)
	}
	defer stop(tb.B, srv)
	client := load.RRClient{Server: path.B, Port: load.RRDefaultPort, Duration: dur, Warmup: 200 * time.Millisecond, Exe: aexe, Congestion: p.CongestionControl}
	out, err := tb.A.Run(ctx, client.Args()...)
	lat, perr := load.ParseRR(out)
	if perr != nil {
		if err != nil {
			return nil, fmt.Errorf("rr client: %w", err)
		}
		return nil, fmt.Errorf("rr client %q: %w", joinArgs(client.Args()), perr)
	}
	return lat, nil
}

// sockperfLatency runs sockperf ping-pong (IPv4 only in sockperf 3.7; its
// client also sleeps about 2 s before measuring).
func sockperfLatency(ctx context.Context, tb *testbed.Pair, path *method.Path, dur time.Duration) (*result.Latency, error) {
	if !path.B.Is4() {
		return nil, fmt.Errorf("%w: sockperf 3.7 supports IPv4 only", errLatencyUnsupported)
	}
	srv, _, err := startServer(ctx, tb.B, load.SockperfServer{Addr: path.B, Port: sockperfPort}.Args(), sockperfPort)
	if err != nil {
		return nil, fmt.Errorf("sockperf server: %w", err)
	}
	defer stop(tb.B, srv)
	logPath := filepath.Join(tb.Dir, "sockperf-full.csv")
	defer os.Remove(logPath)
	secs := max(time.Second, dur.Round(time.Second))
	client := load.SockperfClient{Server: path.B, Port: sockperfPort, Duration: secs, FullLog: logPath}
	out, err := tb.A.Run(ctx, path.Wrap(client.Args())...)
	if err != nil {
		return nil, fmt.Errorf("sockperf client: %w", err)
	}
	full, _ := os.ReadFile(logPath)
	lat, err := load.ParseSockperf(out, full)
	if err != nil {
		return nil, fmt.Errorf("sockperf client %q: %w", joinArgs(client.Args()), err)
	}
	return lat, nil
}

// startServer starts a server in ep and waits until it listens on port.
func startServer(ctx context.Context, ep *testbed.Endpoint, argv []string, port int) (*testbed.Cmd, *bytes.Buffer, error) {
	cmd := ep.Command(ctx, argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := ep.Start(cmd); err != nil {
		return nil, nil, err
	}
	if err := ep.WaitListening(ctx, cmd.Pid(), port, 5*time.Second); err != nil {
		stop(ep, cmd)
		return nil, nil, fmt.Errorf("%q: %w: %s", joinArgs(argv), err, trim(out.String()))
	}
	return cmd, &out, nil
}

// stop ends a server: it is given a moment to exit on its own (a one-shot
// iperf3 server does), then killed.
func stop(ep *testbed.Endpoint, cmd *testbed.Cmd) {
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		_ = cmd.Kill()
		<-done
	}
	ep.Forget(cmd)
}

// crashed reports whether a load tool was ended by a signal (killed,
// crashed) rather than exiting on its own.
func crashed(err error) bool { return testbed.Signaled(err) }

func joinArgs(a []string) string {
	var b bytes.Buffer
	for i, s := range a {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

func trim(s string) string {
	s = string(bytes.TrimSpace([]byte(s)))
	if len(s) > 500 {
		return "..." + s[len(s)-500:]
	}
	return s
}
