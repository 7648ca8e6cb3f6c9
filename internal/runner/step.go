package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/sample"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// runStep measures one step and returns its cell; failures are recorded in
// the cell, never returned, so the run goes on. The stages run in order:
// build the testbed, set the method up, measure the tests (and derive the
// figures), tear down. Each stage's teardown is registered as soon as
// there is something to tear down, so it runs on every later path,
// interrupts and failed set-ups included, and the cell keeps every figure
// measured before a failure.
func runStep(ctx context.Context, cfg Config, runID string, st plan.Step, prog *progress) (cell result.Cell) {
	cell = result.Cell{
		Schema:     result.SchemaVersion,
		RunID:      runID,
		Key:        st.Key,
		Method:     st.Method,
		Params:     st.Params,
		Repetition: st.Repetition,
		Status:     result.StatusOK,
		Started:    time.Now().UTC(),
		Meta:       result.Meta{Kernel: cfg.Host.Kernel, Emulated: cfg.Host.Emulated},
	}
	defer func() { cell.Finished = time.Now().UTC() }()
	s := &stepRun{ctx: ctx, cfg: cfg, st: st, prog: prog, cell: &cell}

	m, err := cfg.Methods.Get(st.Method)
	if err != nil {
		s.fail(err)
		return cell
	}
	s.m = m
	cell.Implementation = m.Implementation()

	// Build the testbed.
	spec := testbed.Spec{UnderlayMTU: st.Params.UnderlayMTU, Pin: st.Params.Pin, A: st.Params.SiteA, B: st.Params.SiteB}
	if p, ok := m.(method.Placer); ok {
		spec.Network = p.Network()
	}
	if s.tb, err = cfg.Bed.Pair(ctx, spec); err != nil {
		s.fail(fmt.Errorf("build testbed: %w", err))
		return cell
	}
	defer s.closeTestbed()
	if err := s.prepareTestbed(); err != nil {
		s.fail(err)
		return cell
	}
	if hi, ok := m.(method.HostImplementer); ok {
		// The programs that carry the traffic are those of the hosts the
		// cell runs on, whose versions may differ from this machine's.
		cell.Implementation = hi.ImplementationOn(ctx, s.tb.A)
	}

	// Set the method up; the connect test times it and probes the tunnel
	// at once.
	var echo *echoServer
	var probe *connectProbe
	if slices.Contains(st.Params.Tests, scenario.TestConnect) {
		if echo, err = startEchoAhead(ctx, s.tb.B); err != nil {
			s.fail(fmt.Errorf("connect: rr echo: %w", err))
		} else if probe, err = startConnectProbe(ctx, s.tb); err != nil {
			s.fail(fmt.Errorf("connect: %w", err))
		}
	}
	// A scaled cell (the tunnels dimension) records what its tunnels
	// cost: the slab is read before the set-up and after it.
	scaled := st.Params.Tunnels > 1
	var slabBefore scaleMemory
	var tool toolMemory
	var slabErr, toolErr error
	if scaled {
		slabBefore, slabErr = readSlab(s.tb)
		tool, toolErr = resetToolPeak(s.tb)
	}
	setupStart := time.Now()
	err = s.setUpMethod()
	setupEnd := time.Now()
	defer s.tearDownMethod() // also after a failed set-up
	if err != nil {
		probe.stop()
		echo.stop()
		s.fail(fmt.Errorf("set up %s: %w", m.Name(), err))
		return cell
	}
	if scaled {
		s.recordScale(setupEnd.Sub(setupStart), slabBefore, tool, errors.Join(slabErr, toolErr))
	}
	if probe != nil {
		if err := echo.listen(ctx, s.path.B); err != nil {
			s.fail(fmt.Errorf("connect: %w", err))
		}
		cell.Connect, err = probe.measure(s.path, setupEnd.Sub(setupStart), setupEnd)
		s.fail(err)
	}
	echo.stop()
	if c, ok := m.(method.Counter); ok {
		// Runs before the method's teardown: the counters go with the
		// data path.
		defer recordCounters(context.WithoutCancel(ctx), c, s.env, &cell.Meta)
	}
	defer s.unpinCongestion() // before the method's teardown
	if err := s.preparePath(); err != nil {
		s.fail(err)
		return cell
	}

	// Measure. The watch stops after the derived figures and before the
	// teardown ends the daemons it watches.
	mctx, w := startWatch(ctx, s.tb, s.path, liveProbes)
	s.w = w
	defer s.stopWatch(w)
	s.measureTests(mctx)
	s.deriveFigures()
	return cell
}

// stepRun is one step on its way to a cell: what the stages of runStep
// share.
type stepRun struct {
	ctx  context.Context
	cfg  Config
	st   plan.Step
	prog *progress
	cell *result.Cell

	m    method.Method
	tb   *testbed.Pair
	env  *method.Env
	path *method.Path
	sp   *span // the span of the first throughput test, for the cost
	w    *watch
	// pins are the routes to the peer that carry the congestion control
	// on remote hosts (pinCongestion).
	pins []congestionPin
}

// fail marks the cell failed and appends err to its error; nil does
// nothing.
func (s *stepRun) fail(err error) {
	if err == nil {
		return
	}
	s.cell.Status = result.StatusFailed
	if s.cell.Error == "" {
		s.cell.Error = err.Error()
	} else {
		s.cell.Error += "; " + err.Error()
	}
}

// prepareTestbed sets the pair up for the cell: congestion control,
// offloads of the underlay, WAN emulation, then the background load (and
// the remote hosts' metadata) measured on the prepared pair.
func (s *stepRun) prepareTestbed() error {
	p, tb, meta := s.st.Params, s.tb, &s.cell.Meta
	ccNote, err := setCongestion(tb, p.CongestionControl)
	if err != nil {
		return err
	}
	if ccNote != "" {
		setExtra(meta, "congestion_control_set", ccNote)
	}
	for k, v := range tb.Notes {
		setExtra(meta, k, v)
	}
	if !p.Offloads {
		for _, ep := range tb.Endpoints() {
			if err := setOffloads(ep, ep.Dev, false); err != nil {
				return fmt.Errorf("switch offloads off on %s: %w", ep.Dev, err)
			}
		}
	}
	if w := p.WAN; w != nil {
		applied, err := applyWAN(s.ctx, tb, w)
		if err != nil {
			return err
		}
		setExtra(meta, "wan", applied)
	}
	busy, err := background(s.ctx, tb, s.cfg.BackgroundWindow)
	if err != nil {
		return fmt.Errorf("measure background load: %w", err)
	}
	meta.BackgroundBusy = busy
	meta.Hosts = remoteHosts(s.ctx, s.cfg.ID, tb)
	meta.Busy = sample.IsBusy(busy)
	return nil
}

// closeTestbed tears the pair down.
func (s *stepRun) closeTestbed() {
	if err := s.tb.Close(); err != nil {
		s.fail(fmt.Errorf("tear down testbed: %w", err))
	}
}

// setUpMethod sets the method up on the pair.
func (s *stepRun) setUpMethod() error {
	p := s.st.Params
	s.env = &method.Env{
		A: s.tb.A, B: s.tb.B,
		Family:      p.Family,
		UnderlayMTU: p.UnderlayMTU,
		OverlayMTU:  p.OverlayMTU,
		Prefix:      testbed.DevicePrefix(s.cfg.ID),
		Dir:         s.tb.Dir,
		Options:     p.Options,
		Tunnels:     p.Tunnels,
	}
	var err error
	s.path, err = s.m.Setup(s.ctx, s.env)
	return err
}

// tearDownMethod tears the method down, even when the run is being
// interrupted. A scaled cell records how long it took: runStep's defers
// run before it returns the cell, which the run stores after.
func (s *stepRun) tearDownMethod() {
	start := time.Now()
	err := s.m.Teardown(context.WithoutCancel(s.ctx), s.env)
	if sc := s.cell.Scale; sc != nil {
		sc.Teardown = time.Since(start).Seconds()
	}
	if err != nil {
		s.fail(fmt.Errorf("tear down %s: %w", s.m.Name(), err))
	}
}

// recordScale records the cost of a scaled set-up that took setup: the
// slab and tunbench's own memory read before it (or why they could not
// be), the slab, the daemons' memory and tunbench's peak now, and the
// method's timed adds. Memory that cannot
// be read fails the cell: a zero would read as free.
func (s *stepRun) recordScale(setup time.Duration, before scaleMemory, tool toolMemory, beforeErr error) {
	after, afterErr := readSlab(s.tb)
	rss, rssErr := daemonRSS(s.tb, s.path)
	peak, peakErr := readToolPeak(s.tb)
	s.cell.Scale = newScale(s.env.N(), s.scaleUnit(), setup, s.path.Adds, before, after, rss)
	s.cell.Scale.ToolRSSBefore, s.cell.Scale.ToolPeakRSS = tool.rss, peak
	if err := errors.Join(beforeErr, afterErr, rssErr, peakErr); err != nil {
		s.fail(fmt.Errorf("scale: memory: %w", err))
	}
}

// preparePath finishes the method's path for the measurement: congestion
// control on the routes, the path's variant and overlay MTU, offloads of
// the method's devices, the offload set, and the description of every
// device.
func (s *stepRun) preparePath() error {
	p, tb, path, cell := s.st.Params, s.tb, s.path, s.cell
	skipped, err := routeCongestion(tb)
	if err != nil {
		return err
	}
	pins, left, err := pinCongestion(tb, path)
	s.pins = pins
	if err != nil {
		return err
	}
	if left = append(skipped, left...); len(left) > 0 {
		setExtra(&cell.Meta, "congestion_control_routes_left", strings.Join(left, "; "))
	}
	cell.Meta.Variant = path.Variant
	cell.Meta.Datapath = path.Datapath
	if path.OverlayMTU != 0 && path.OverlayMTU != cell.Params.OverlayMTU {
		cell.Params.OverlayMTU = path.OverlayMTU
	}
	if !p.Offloads {
		if err := offloadsOff(tb, path); err != nil {
			return err
		}
	}
	if set := p.OffloadFeatures; len(set) > 0 {
		notApplied, err := applyOffloadSet(tb, path, set)
		if err != nil {
			return err
		}
		if len(notApplied) > 0 {
			setExtra(&cell.Meta, "offload_set_not_applied", strings.Join(notApplied, "; "))
		}
	}
	prefix := ""
	if cell.Params.Tunnels > 1 {
		prefix = s.env.Prefix
	}
	devices, err := describe(tb, path, prefix)
	if err != nil {
		return err
	}
	cell.Meta.Devices = devices
	return nil
}

// unpinCongestion removes the routes pinCongestion added.
func (s *stepRun) unpinCongestion() {
	if err := unpinCongestion(s.pins); err != nil {
		s.fail(err)
	}
	s.pins = nil
}

// stopWatch stops the watch; a fault it saw fails the cell, first in its
// error.
func (s *stepRun) stopWatch(w *watch) {
	if err := w.stop(); err != nil {
		s.cell.Status = result.StatusFailed
		msg := "fault during the measurement: " + err.Error()
		if s.cell.Error != "" {
			msg += "; " + s.cell.Error
		}
		s.cell.Error = msg
	}
}

// measureTests runs the cell's tests in order (tcp_stream and tcp_rr when
// none are named) until the measurement's context ends.
func (s *stepRun) measureTests(mctx context.Context) {
	tests := s.st.Params.Tests
	if len(tests) == 0 {
		tests = []string{scenario.TestTCPStream, scenario.TestTCPRR}
	}
	for _, test := range tests {
		if mctx.Err() != nil {
			s.fail(fmt.Errorf("%s: %w", test, context.Cause(mctx)))
			break
		}
		s.measureTest(mctx, test)
	}
}

// measureTest runs one test and records what it measured, also when it
// failed.
func (s *stepRun) measureTest(mctx context.Context, test string) {
	tb, path, p, cell := s.tb, s.path, s.st.Params, s.cell
	switch test {
	case scenario.TestTCPStream:
		thr, cpu, tsp, err := measureThroughput(mctx, tb, path, p, s.prog)
		cell.Throughput, cell.CPU, s.sp = thr, cpu, tsp
		if err != nil {
			s.fail(fmt.Errorf("throughput: %w", err))
		} else if thr != nil {
			s.fail(nothingReceived(test, thr.Bytes, thr.SenderBitsPerSecond, thr.Retransmits, p.Duration, s.m.Name()))
		}
	case scenario.TestParallel:
		par, psp, err := measureParallel(mctx, tb, path, p, s.prog)
		cell.Parallel = par
		if s.sp == nil {
			s.sp = psp
		}
		if err != nil {
			s.fail(fmt.Errorf("parallel: %w", err))
		} else if par != nil {
			s.fail(nothingReceived(test, par.Bytes, par.SenderBitsPerSecond, par.Retransmits, p.Duration, s.m.Name()))
		}
	case scenario.TestTCPRR:
		if p.Latency <= 0 {
			return
		}
		lat, err := measureLatency(mctx, tb, path, p)
		switch {
		case errors.Is(err, errLatencyUnsupported):
			setExtra(&cell.Meta, "latency", err.Error())
		case err != nil:
			s.fail(fmt.Errorf("latency: %w", err))
		default:
			cell.Latency = lat
		}
	case scenario.TestLatencyUnderLoad:
		lul, err := measureLatencyUnderLoad(mctx, tb, path, p, cell.Latency)
		cell.LatencyUnderLoad = lul
		if err != nil {
			s.fail(fmt.Errorf("latency under load: %w", err))
		}
	case scenario.TestMTUProbe:
		probe, err := measureMTUProbe(mctx, tb, path, p, cell.Params.OverlayMTU)
		cell.MTUProbe = probe
		if err != nil {
			s.fail(fmt.Errorf("mtu_probe: %w", err))
		}
	case scenario.TestConnect:
		// Measured around the method's set-up (runStep).
	case scenario.TestRecover:
		rec, err := measureRecover(mctx, tb, s.m, s.env, path, time.Duration(p.RecoverDown*float64(time.Second)), s.w)
		cell.Recover = rec
		if err != nil {
			s.fail(fmt.Errorf("recover: %w", err))
		}
	case scenario.TestReconf:
		rec, err := measureReconf(mctx, tb, s.m, s.env, path, p)
		cell.Reconf = rec
		if err != nil {
			s.fail(fmt.Errorf("reconf: %w", err))
		}
	case scenario.TestUDPSizes:
		sizes, err := measureUDPSizes(mctx, tb, path, p, cell.Params.OverlayMTU)
		cell.UDPSizes = sizes
		if err != nil {
			s.fail(fmt.Errorf("udp_sizes: %w", err))
		}
	default:
		s.fail(fmt.Errorf("unknown test %q", test))
	}
}

// deriveFigures records the congestion control the connections used (failing
// the cell on a mismatch) and the cell's derived figures.
func (s *stepRun) deriveFigures() {
	p, cell := s.st.Params, s.cell
	cell.Meta.CongestionControl = usedCongestion(cell)
	s.fail(checkCongestion(p.CongestionControl, cell.Meta.CongestionControl))
	cell.Derived = derive(cell, method.HeaderOverhead(s.m, p.Family, p.Options, s.path.Variant), s.sp, underlaySpeed(s.tb, p.Direction, cell))
}

// setExtra records one note in meta.Extra.
func setExtra(meta *result.Meta, key, value string) {
	if meta.Extra == nil {
		meta.Extra = map[string]string{}
	}
	meta.Extra[key] = value
}

// offloadsOff switches TSO/GSO/GRO off on the method's own devices too
// (the underlay is done when the testbed is built).
func offloadsOff(tb *testbed.Pair, path *method.Path) error {
	var errs []error
	for _, ep := range tb.Endpoints() {
		for _, dev := range path.Devices[ep.Side] {
			if dev == ep.Dev {
				continue
			}
			if err := setOffloads(ep, dev, false); err != nil {
				errs = append(errs, fmt.Errorf("switch offloads off on %s: %w", dev, err))
			}
		}
	}
	return errors.Join(errs...)
}

// describe records every device of both namespaces with MTU and offloads;
// with prefix set (a cell of more than one tunnel), of the devices named
// prefix... only the path's own (the measured tunnel's): at 1,000
// tunnels under emulation, describing each of the others' devices
// outlasted netlink's timeout, and would store thousands in every cell.
func describe(tb *testbed.Pair, path *method.Path, prefix string) ([]result.Device, error) {
	var all []result.Device
	for _, ep := range tb.Endpoints() {
		a := describeArgs{Side: ep.Side, Prefix: prefix}
		if prefix != "" && path != nil {
			a.Keep = path.Devices[ep.Side]
		}
		devs, err := opDescribe.Call(context.Background(), ep, a)
		if err != nil {
			return nil, fmt.Errorf("describe devices of %s: %w", ep.Side, err)
		}
		all = append(all, devs...)
	}
	return all, nil
}

// recordCounters stores the data path's own counters in meta.Extra.
func recordCounters(ctx context.Context, c method.Counter, env *method.Env, meta *result.Meta) {
	if meta.Extra == nil {
		meta.Extra = map[string]string{}
	}
	counters, err := c.Counters(ctx, env)
	if err != nil {
		meta.Extra["counters"] = "unreadable: " + err.Error()
		return
	}
	for k, v := range counters {
		meta.Extra[k] = v
	}
}

// underlaySpeed reads the driver and link speed of the sending side's
// underlay device (b's with direction reverse). A failure leaves the
// device's speed unknown and is noted in the cell's extra metadata.
func underlaySpeed(tb *testbed.Pair, direction string, cell *result.Cell) nic.LinkSpeed {
	ep := tb.A
	if direction == scenario.DirReverse {
		ep = tb.B
	}
	ls, err := opSpeed.Call(context.Background(), ep, ep.Dev)
	if err != nil {
		setExtra(&cell.Meta, "line_rate", "device speed not read: "+err.Error())
		return nic.LinkSpeed{}
	}
	return ls
}
