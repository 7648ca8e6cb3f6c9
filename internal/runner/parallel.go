package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/sample"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// parallelBasePort is the first port of the parallel test's iperf3
// servers; process i listens on parallelBasePort+i.
const parallelBasePort = 5301

// loadPort is where latency_under_load's iperf3 server listens.
const loadPort = 5202

// span is what the underlay devices counted over the CPU sampling
// interval, for the cost per packet.
type span struct {
	ok            bool
	start, stop   time.Time
	before, after [2]sample.Counters // a, b
	// cycles is what the machine's CPUs counted over the same interval,
	// when hardware cycle counters are exposed; else cyclesErr says why.
	counter   cycleCounter
	cycles    uint64
	cyclesErr error
	// newCounter makes the counter; nil is the perf_event one (tests
	// pass a fake).
	newCounter func() cycleCounter
}

func (s *span) begin(tb *testbed.Pair) {
	var err error
	if tb.A.Local() && tb.B.Local() {
		s.startCycles()
	} else {
		s.cyclesErr = errors.New("cycle counters are read on this machine only, and the endpoints are on other hosts")
	}
	s.start = time.Now()
	if s.before[0], err = sample.LinkCounters(tb.A.NL, tb.A.Dev); err != nil {
		return
	}
	if s.before[1], err = sample.LinkCounters(tb.B.NL, tb.B.Dev); err != nil {
		return
	}
	s.ok = true
}

// startCycles starts a cycle counter (s.newCounter's, the perf_event one
// when nil); a failure is kept for the cost's basis note.
func (s *span) startCycles() {
	if s.newCounter != nil {
		s.counter = s.newCounter()
	} else {
		s.counter = &perfCycles{}
	}
	if s.cyclesErr = s.counter.start(); s.cyclesErr != nil {
		s.counter = nil
	}
}

// stopCycles reads and releases the counter, if one started.
func (s *span) stopCycles() {
	if s.counter != nil {
		s.cycles, s.cyclesErr = s.counter.stop()
		s.counter = nil
	}
}

func (s *span) end(tb *testbed.Pair) {
	s.stopCycles()
	if !s.ok {
		return
	}
	var err error
	s.stop = time.Now()
	if s.after[0], err = sample.LinkCounters(tb.A.NL, tb.A.Dev); err != nil {
		s.ok = false
		return
	}
	if s.after[1], err = sample.LinkCounters(tb.B.NL, tb.B.Dev); err != nil {
		s.ok = false
	}
}

// sides says which CPU side the processes of endpoint a and b count as:
// with direction reverse, b sends.
func sides(direction string) (a, b string) {
	if direction == scenario.DirReverse {
		return sample.SideReceiver, sample.SideSender
	}
	return sample.SideSender, sample.SideReceiver
}

func trackDaemons(s *cpuSampler, tb *testbed.Pair, path *method.Path, direction string) error {
	aSide, bSide := sides(direction)
	for _, d := range path.Daemons {
		side, ep := aSide, tb.A
		if d.Side == "b" {
			side, ep = bSide, tb.B
		}
		if err := s.TrackProcess(ep, d.Role+"-"+d.Side, side, d.PID); err != nil {
			return fmt.Errorf("account cpu of %s-%s: %w", d.Role, d.Side, err)
		}
	}
	return nil
}

// measureParallel runs the parallel test: the cell's streams spread over
// several iperf3 client/server pairs on distinct ports (load.SplitStreams),
// started together. Each process's result is stored and summed; a process
// that fails makes the test fail with its own message.
func measureParallel(ctx context.Context, tb *testbed.Pair, path *method.Path, p result.Params, prog *progress) (*result.Parallel, *span, error) {
	return measureParallelNotify(ctx, tb, path, p, prog, nil)
}

// measureParallelNotify is measureParallel calling released (if not nil)
// the moment the clients are let go.
func measureParallelNotify(ctx context.Context, tb *testbed.Pair, path *method.Path, p result.Params, prog *progress, released func()) (*result.Parallel, *span, error) {
	dur := time.Duration(p.Duration * float64(time.Second))
	omit := time.Duration(p.Omit * float64(time.Second))
	split := load.SplitStreams(p.Streams, p.StreamsPerProcess)
	// Starting processes in a namespace costs tens of milliseconds each on
	// a busy 2-core machine: the budget grows with their number.
	ctx, cancel := context.WithTimeout(ctx, dur+omit+60*time.Second+time.Duration(len(split))*300*time.Millisecond)
	defer cancel()
	sampler := newCPUSampler(tb, p.Direction)
	targets, spread := parallelTargets(path, p, len(split))

	servers, srvOut, err := startParallelServers(ctx, tb, targets, sampler, p.Direction)
	defer stopAll(tb.B, servers)
	if err != nil {
		return nil, nil, err
	}
	if err := trackDaemons(sampler, tb, path, p.Direction); err != nil {
		return nil, nil, err
	}

	clients, gates, err := newParallelClients(ctx, tb, path, targets, p, split)
	defer removeOutputs(clients)
	if err != nil {
		return nil, nil, err
	}
	var counters *spreadCounters
	if spread != nil {
		counters = beginSpread(tb.B, targets, spread)
	}
	started, startErr := startParallelClients(tb, sampler, clients, p.Direction)
	for _, g := range gates {
		_ = g.Close()
	}
	if released != nil {
		released()
	}
	if startErr != nil {
		for _, cl := range started {
			_ = cl.cmd.Kill()
		}
		waitClients(tb.A, started)
		return nil, nil, startErr
	}
	sp := &span{}
	w := &window{tb: tb, sampler: sampler, live: tb.A, prog: prog, span: sp}
	w.begin(ctx, omit)
	waitClients(tb.A, started)
	for _, cl := range started {
		sampler.Exited(tb.A, cl.cmd)
	}
	cpu, cpuErr := w.end()

	par, errs := collectParallel(clients, split, srvOut, p, cpu)
	par.Tunnels = counters.end(tb.B)
	if len(errs) > 0 {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("iperf3 did not finish: %w", context.Cause(ctx)))
		}
		return par, sp, errors.Join(errs...)
	}
	return par, sp, cpuErr
}

// startParallelServers starts one iperf3 server per process on ports from
// parallelBasePort, server i bound to binds[i] (parallelTargets), all at
// once, then waits for each to listen and tracks its CPU. The servers are
// returned also on failure, for the caller to stop; outs holds each
// server's output.
func startParallelServers(ctx context.Context, tb *testbed.Pair, binds []netip.Addr, sampler *cpuSampler, direction string) (servers []*testbed.Cmd, outs []*bytes.Buffer, err error) {
	_, bSide := sides(direction)
	n := len(binds)
	servers = make([]*testbed.Cmd, n)
	outs = make([]*bytes.Buffer, n)
	for i := range n {
		argv := load.Iperf3Server{Bind: binds[i], Port: parallelBasePort + i}.Args()
		cmd := tb.B.Command(ctx, argv...)
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		servers[i] = cmd
	}
	if err := startAll(tb.B, servers); err != nil {
		return servers, outs, fmt.Errorf("iperf3 servers: %w", err)
	}
	for i, cmd := range servers {
		if err := tb.B.WaitListening(ctx, cmd.Pid(), parallelBasePort+i, 10*time.Second); err != nil {
			return servers, outs, fmt.Errorf("iperf3 server on port %d: %w: %s", parallelBasePort+i, err, trim(outs[i].String()))
		}
		if err := sampler.TrackProcess(tb.B, fmt.Sprintf("iperf3-server-%d", parallelBasePort+i), bSide, cmd.Pid()); err != nil {
			return servers, outs, fmt.Errorf("account cpu of iperf3 server %d: %w", i+1, err)
		}
	}
	return servers, outs, nil
}

// parallelClient is one iperf3 client process of the parallel test.
type parallelClient struct {
	cmd *testbed.Cmd
	// out is a file, not a pipe: with hundreds of processes on a busy
	// machine, a pipe's copying goroutine can lag past exec's WaitDelay
	// and cut the JSON report short.
	out     *os.File
	err     bytes.Buffer
	waitErr error
}

// newParallelClients prepares one client per process, each held at its
// gate: it waits on its stdin, then execs iperf3 (same pid), so closing
// every gate at once starts them together however long starting them
// took. The clients made so far are returned also on failure, for
// removeOutputs. Client i sends to targets[i] (parallelTargets).
func newParallelClients(ctx context.Context, tb *testbed.Pair, path *method.Path, targets []netip.Addr, p result.Params, split []int) ([]*parallelClient, []io.WriteCloser, error) {
	dur := time.Duration(p.Duration * float64(time.Second))
	omit := time.Duration(p.Omit * float64(time.Second))
	clients := make([]*parallelClient, 0, len(split))
	gates := make([]io.WriteCloser, 0, len(split))
	for i, n := range split {
		c := load.Iperf3Client{Server: targets[i], Port: parallelBasePort + i, Duration: dur, Omit: omit, Streams: n,
			Reverse: p.Direction == scenario.DirReverse, Bidir: p.Direction == scenario.DirBidir, MSS: p.MSS, Congestion: p.CongestionControl}
		if err := c.Validate(); err != nil {
			return clients, gates, err
		}
		cl := &parallelClient{cmd: tb.A.Command(ctx, append([]string{"sh", "-c", `read _ ; exec "$@"`, "sh"}, path.Wrap(c.Args())...)...)}
		out, err := os.CreateTemp(tb.Dir, fmt.Sprintf("iperf3-client-%d-*.json", parallelBasePort+i))
		if err != nil {
			return clients, gates, fmt.Errorf("iperf3 client %d: output file: %w", i+1, err)
		}
		cl.out = out
		clients = append(clients, cl)
		cl.cmd.Stdout, cl.cmd.Stderr = out, &cl.err
		cl.cmd.WaitDelay = 30 * time.Second // stderr is a pipe; see out
		gate, err := cl.cmd.StdinPipe()
		if err != nil {
			return clients, gates, fmt.Errorf("iperf3 client %d: %w", i+1, err)
		}
		gates = append(gates, gate)
	}
	return clients, gates, nil
}

// removeOutputs closes and removes the clients' output files.
func removeOutputs(clients []*parallelClient) {
	for _, cl := range clients {
		cl.out.Close()
		os.Remove(cl.out.Name())
	}
}

// startParallelClients starts the clients (still held at their gates) and
// tracks their CPU. It returns the clients that started, also on failure:
// they are to be killed and waited for.
func startParallelClients(tb *testbed.Pair, sampler *cpuSampler, clients []*parallelClient, direction string) ([]*parallelClient, error) {
	aSide, _ := sides(direction)
	cmds := make([]*testbed.Cmd, len(clients))
	for i, cl := range clients {
		cmds[i] = cl.cmd
	}
	var started []*parallelClient
	startErr := startAll(tb.A, cmds)
	for i, cl := range clients {
		if !cl.cmd.Started() {
			continue
		}
		started = append(started, cl)
		if startErr == nil {
			if err := sampler.TrackProcess(tb.A, fmt.Sprintf("iperf3-client-%d", parallelBasePort+i), aSide, cl.cmd.Pid()); err != nil {
				startErr = fmt.Errorf("account cpu of iperf3 client %d: %w", i+1, err)
			}
		}
	}
	return started, startErr
}

// waitClients waits for every started client to exit.
func waitClients(ep *testbed.Endpoint, started []*parallelClient) {
	var wg sync.WaitGroup
	for _, cl := range started {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.waitErr = cl.cmd.Wait()
		}()
	}
	wg.Wait()
	for _, cl := range started {
		ep.Forget(cl.cmd)
	}
}

// collectParallel reads each client's report into the test's record,
// with the sum of the processes; a process that failed has its error in
// its record and in errs.
func collectParallel(clients []*parallelClient, split []int, srvOut []*bytes.Buffer, p result.Params, cpu *result.CPU) (*result.Parallel, []error) {
	par := &result.Parallel{Streams: p.Streams, StreamsPerProcess: p.StreamsPerProcess, CPU: cpu}
	var errs []error
	for i, cl := range clients {
		pt := result.ProcessThroughput{Port: parallelBasePort + i, Streams: split[i]}
		report, rerr := os.ReadFile(cl.out.Name())
		if rerr != nil {
			report = nil
		}
		thr, err := load.ParseIperf3(report)
		switch {
		case err != nil:
			pt.Error = fmt.Sprintf("%v (stderr: %s; server: %s)", err, trim(cl.err.String()), trim(srvOut[i].String()))
		case cl.waitErr != nil:
			pt.Error = fmt.Sprintf("%v: %s", cl.waitErr, trim(cl.err.String()))
		}
		if pt.Error != "" {
			errs = append(errs, fmt.Errorf("iperf3 process %d of %d (port %d, %d streams): %s", i+1, len(split), pt.Port, pt.Streams, pt.Error))
		}
		if thr != nil {
			pt.BitsPerSecond, pt.SenderBitsPerSecond = thr.BitsPerSecond, thr.SenderBitsPerSecond
			pt.Bytes, pt.Retransmits = thr.Bytes, thr.Retransmits
			pt.SenderToolCPUPercent, pt.ReceiverToolCPUPercent = thr.SenderToolCPUPercent, thr.ReceiverToolCPUPercent
			pt.Congestion = thr.SenderCongestion
			par.Intervals = addIntervals(par.Intervals, thr.Intervals)
		}
		par.Processes = append(par.Processes, pt)
	}
	par.BitsPerSecond, par.SenderBitsPerSecond, par.Bytes, par.Retransmits = sumProcesses(par.Processes)
	return par, errs
}

// startAll starts cmds in ep, eight at a time; on failure the ones that
// started keep running for the caller to stop.
func startAll(ep *testbed.Endpoint, cmds []*testbed.Cmd) error {
	sem := make(chan struct{}, 8)
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := ep.Start(c); err != nil {
				errs[i] = fmt.Errorf("process %d of %d: %w", i+1, len(cmds), err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sumProcesses adds the processes' rates, bytes and retransmits.
func sumProcesses(ps []result.ProcessThroughput) (bps, senderBps float64, bytes, retr int64) {
	for _, p := range ps {
		bps += p.BitsPerSecond
		senderBps += p.SenderBitsPerSecond
		bytes += p.Bytes
		retr += p.Retransmits
	}
	return bps, senderBps, bytes, retr
}

// addIntervals adds b's intervals to sum, index by index (the processes
// start together, so interval i covers the same second in each).
func addIntervals(sum, b []result.Interval) []result.Interval {
	for i, iv := range b {
		if i >= len(sum) {
			sum = append(sum, iv)
			continue
		}
		sum[i].Bytes += iv.Bytes
		sum[i].BitsPerSecond += iv.BitsPerSecond
		sum[i].Retransmits += iv.Retransmits
	}
	return sum
}

// stopAll stops servers concurrently: one-shot iperf3 servers have exited
// by now, the rest are killed after a second.
func stopAll(ep *testbed.Endpoint, cmds []*testbed.Cmd) {
	var wg sync.WaitGroup
	for _, c := range cmds {
		if c == nil || !c.Started() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stop(ep, c)
		}()
	}
	wg.Wait()
}

// measureLatencyUnderLoad measures request/response latency on the idle
// tunnel (or takes the tcp_rr result of this cell), then again while one
// iperf3 process with the cell's streams (at most 128) saturates it.
func measureLatencyUnderLoad(ctx context.Context, tb *testbed.Pair, path *method.Path, p result.Params, idle *result.Latency) (*result.LatencyUnderLoad, error) {
	out := &result.LatencyUnderLoad{Load: scenario.TestTCPStream, Idle: idle}
	if idle == nil {
		lat, err := measureLatency(ctx, tb, path, p)
		if err != nil {
			return out, fmt.Errorf("idle latency: %w", err)
		}
		out.Idle = lat
	}
	latDur := time.Duration(p.Latency * float64(time.Second))
	omit := time.Duration(p.Omit * float64(time.Second))
	lead := time.Duration(plan.LoadedLead) * time.Second
	if p.Streams > scenario.MaxStreamsPerProcess {
		return loadedByParallel(ctx, tb, path, p, out)
	}
	// The load outlasts the latency test by a second on each side.
	loadDur := (latDur + lead + time.Second + time.Second - 1).Truncate(time.Second)
	ctx, cancel := context.WithTimeout(ctx, loadDur+omit+60*time.Second)
	defer cancel()
	srv, srvOut, err := startServer(ctx, tb.B, load.Iperf3Server{Bind: path.B, Port: loadPort}.Args(), loadPort)
	if err != nil {
		return out, fmt.Errorf("load iperf3 server: %w", err)
	}
	defer stop(tb.B, srv)
	c := load.Iperf3Client{Server: path.B, Port: loadPort, Duration: loadDur, Omit: omit, Streams: min(p.Streams, scenario.MaxStreamsPerProcess),
		Reverse: p.Direction == scenario.DirReverse, Bidir: p.Direction == scenario.DirBidir, MSS: p.MSS, Congestion: p.CongestionControl}
	cmd := tb.A.Command(ctx, path.Wrap(c.Args())...)
	var lo, le bytes.Buffer
	cmd.Stdout, cmd.Stderr = &lo, &le
	if err := tb.A.Start(cmd); err != nil {
		return out, fmt.Errorf("load iperf3 client: %w", err)
	}
	var latErr error
	select {
	case <-time.After(omit + lead):
		out.Loaded, latErr = measureLatency(ctx, tb, path, p)
	case <-ctx.Done():
		latErr = context.Cause(ctx)
	}
	waitErr := cmd.Wait()
	tb.A.Forget(cmd)
	thr, perr := load.ParseIperf3(lo.Bytes())
	if thr != nil {
		out.LoadBitsPerSecond = thr.BitsPerSecond
	}
	if latErr != nil {
		return out, fmt.Errorf("loaded latency: %w", latErr)
	}
	if perr != nil || waitErr != nil {
		return out, fmt.Errorf("load iperf3 client %q: %w (stderr: %s; server: %s)", joinArgs(cmd.Args), errors.Join(perr, waitErr), trim(le.String()), trim(srvOut.String()))
	}
	out.P50Ratio, out.P99Ratio = ratios(out.Idle, out.Loaded)
	return out, nil
}

// ratios are loaded over idle p50 and p99; 0 where idle is 0.
func ratios(idle, loaded *result.Latency) (p50, p99 float64) {
	if idle == nil || loaded == nil {
		return 0, 0
	}
	if idle.P50 > 0 {
		p50 = loaded.P50 / idle.P50
	}
	if idle.P99 > 0 {
		p99 = loaded.P99 / idle.P99
	}
	return p50, p99
}

// loadedByParallel is latency_under_load with more streams than one iperf3
// process takes: the parallel test's machinery carries the load, and the
// request/response test starts its warm-up plus a second after the clients
// are released.
func loadedByParallel(ctx context.Context, tb *testbed.Pair, path *method.Path, p result.Params, out *result.LatencyUnderLoad) (*result.LatencyUnderLoad, error) {
	out.Load = scenario.TestParallel
	latDur := time.Duration(p.Latency * float64(time.Second))
	lead := time.Duration(plan.LoadedLead) * time.Second
	lp := p
	lp.Duration = (latDur + lead + 2*time.Second - 1).Truncate(time.Second).Seconds()
	if lp.StreamsPerProcess == 0 {
		lp.StreamsPerProcess = scenario.MaxStreamsPerProcess
	}
	// The load crosses the measured tunnel, as latency_under_load's
	// request/response test does: spread is the parallel test's.
	lp.Spread = false
	released := make(chan struct{})
	type res struct {
		par *result.Parallel
		err error
	}
	done := make(chan res, 1)
	go func() {
		par, _, err := measureParallelNotify(ctx, tb, path, lp, nil, func() { close(released) })
		done <- res{par, err}
	}()
	var latErr error
	select {
	case <-released:
		select {
		case <-time.After(time.Duration(p.Omit*float64(time.Second)) + lead):
			out.Loaded, latErr = measureLatency(ctx, tb, path, p)
		case <-ctx.Done():
			latErr = context.Cause(ctx)
		}
	case r := <-done:
		done <- r
		latErr = errors.New("the parallel load ended before it was released")
	}
	r := <-done
	if r.par != nil {
		out.LoadBitsPerSecond = r.par.BitsPerSecond
	}
	if latErr != nil {
		return out, fmt.Errorf("loaded latency: %w", errors.Join(latErr, r.err))
	}
	if r.err != nil {
		return out, fmt.Errorf("parallel load: %w", r.err)
	}
	out.P50Ratio, out.P99Ratio = ratios(out.Idle, out.Loaded)
	return out, nil
}
