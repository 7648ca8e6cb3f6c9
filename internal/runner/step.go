package runner

import (
	"context"
	"errors"
	"fmt"
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
// the cell, never returned, so the run goes on.
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
	fail := func(err error) {
		if err == nil {
			return
		}
		cell.Status = result.StatusFailed
		if cell.Error == "" {
			cell.Error = err.Error()
		} else {
			cell.Error += "; " + err.Error()
		}
	}
	defer func() { cell.Finished = time.Now().UTC() }()

	m, err := cfg.Methods.Get(st.Method)
	if err != nil {
		fail(err)
		return cell
	}
	cell.Implementation = m.Implementation()

	tb, err := cfg.Bed.Pair(ctx, testbed.Spec{UnderlayMTU: st.Params.UnderlayMTU, Pin: st.Params.Pin, A: st.Params.SiteA, B: st.Params.SiteB})
	if err != nil {
		fail(fmt.Errorf("build testbed: %w", err))
		return cell
	}
	defer func() {
		if err := tb.Close(); err != nil {
			fail(fmt.Errorf("tear down testbed: %w", err))
		}
	}()
	ccNote, err := setCongestion(tb, st.Params.CongestionControl)
	if err != nil {
		fail(err)
		return cell
	}
	if ccNote != "" {
		if cell.Meta.Extra == nil {
			cell.Meta.Extra = map[string]string{}
		}
		cell.Meta.Extra["congestion_control_set"] = ccNote
	}
	if !st.Params.Offloads {
		for _, ep := range tb.Endpoints() {
			if err := setOffloads(ep, ep.Dev, false); err != nil {
				fail(fmt.Errorf("switch offloads off on %s: %w", ep.Dev, err))
				return cell
			}
		}
	}

	if w := st.Params.WAN; w != nil {
		applied, err := applyWAN(ctx, tb, w)
		if err != nil {
			fail(err)
			return cell
		}
		if cell.Meta.Extra == nil {
			cell.Meta.Extra = map[string]string{}
		}
		cell.Meta.Extra["wan"] = applied
	}

	busy, err := background(ctx, tb, cfg.BackgroundWindow)
	if err != nil {
		fail(fmt.Errorf("measure background load: %w", err))
		return cell
	}
	cell.Meta.BackgroundBusy = busy
	cell.Meta.Hosts = remoteHosts(ctx, cfg.ID, tb)
	cell.Meta.Busy = sample.IsBusy(busy)

	env := &method.Env{
		A: tb.A, B: tb.B,
		Family:      st.Params.Family,
		UnderlayMTU: st.Params.UnderlayMTU,
		OverlayMTU:  st.Params.OverlayMTU,
		Prefix:      testbed.DevicePrefix(cfg.ID),
		Dir:         tb.Dir,
		Options:     st.Params.Options,
	}
	path, err := m.Setup(ctx, env)
	defer func() {
		// Teardown must run even when the run is being interrupted.
		if err := m.Teardown(context.WithoutCancel(ctx), env); err != nil {
			fail(fmt.Errorf("tear down %s: %w", m.Name(), err))
		}
	}()
	if err != nil {
		fail(fmt.Errorf("set up %s: %w", m.Name(), err))
		return cell
	}
	if c, ok := m.(method.Counter); ok {
		// Runs before the Teardown above: the counters go with the data path.
		defer func() { recordCounters(context.WithoutCancel(ctx), c, env, &cell.Meta) }()
	}
	if skipped, err := routeCongestion(tb); err != nil {
		fail(err)
		return cell
	} else if len(skipped) > 0 {
		if cell.Meta.Extra == nil {
			cell.Meta.Extra = map[string]string{}
		}
		cell.Meta.Extra["congestion_control_routes_left"] = strings.Join(skipped, "; ")
	}
	cell.Meta.Variant = path.Variant
	if path.OverlayMTU != 0 && path.OverlayMTU != cell.Params.OverlayMTU {
		cell.Params.OverlayMTU = path.OverlayMTU
	}
	if !st.Params.Offloads {
		fail(offloadsOff(tb, path))
		if cell.Status == result.StatusFailed {
			return cell
		}
	}
	if set := st.Params.OffloadFeatures; len(set) > 0 {
		notApplied, err := applyOffloadSet(tb, path, set)
		if err != nil {
			fail(err)
			return cell
		}
		if len(notApplied) > 0 {
			if cell.Meta.Extra == nil {
				cell.Meta.Extra = map[string]string{}
			}
			cell.Meta.Extra["offload_set_not_applied"] = strings.Join(notApplied, "; ")
		}
	}
	devices, err := describe(tb, path)
	if err != nil {
		fail(err)
		return cell
	}
	cell.Meta.Devices = devices

	// Registered after Teardown's defer, so it stops before teardown
	// ends the daemons it watches.
	mctx, w := startWatch(ctx, tb, path)
	defer func() {
		if err := w.stop(); err != nil {
			cell.Status = result.StatusFailed
			msg := "fault during the measurement: " + err.Error()
			if cell.Error != "" {
				msg += "; " + cell.Error
			}
			cell.Error = msg
		}
	}()

	tests := st.Params.Tests
	if len(tests) == 0 {
		tests = []string{scenario.TestTCPStream, scenario.TestTCPRR}
	}
	var sp *span
	for _, test := range tests {
		if mctx.Err() != nil {
			fail(fmt.Errorf("%s: %w", test, context.Cause(mctx)))
			break
		}
		switch test {
		case scenario.TestTCPStream:
			thr, cpu, tsp, err := measureThroughput(mctx, tb, path, st.Params, prog)
			cell.Throughput, cell.CPU, sp = thr, cpu, tsp
			if err != nil {
				fail(fmt.Errorf("throughput: %w", err))
			}
		case scenario.TestParallel:
			par, psp, err := measureParallel(mctx, tb, path, st.Params, prog)
			cell.Parallel = par
			if sp == nil {
				sp = psp
			}
			if err != nil {
				fail(fmt.Errorf("parallel: %w", err))
			}
		case scenario.TestTCPRR:
			if st.Params.Latency <= 0 {
				continue
			}
			lat, err := measureLatency(mctx, tb, path, st.Params)
			switch {
			case errors.Is(err, errLatencyUnsupported):
				if cell.Meta.Extra == nil {
					cell.Meta.Extra = map[string]string{}
				}
				cell.Meta.Extra["latency"] = err.Error()
			case err != nil:
				fail(fmt.Errorf("latency: %w", err))
			default:
				cell.Latency = lat
			}
		case scenario.TestLatencyUnderLoad:
			lul, err := measureLatencyUnderLoad(mctx, tb, path, st.Params, cell.Latency)
			cell.LatencyUnderLoad = lul
			if err != nil {
				fail(fmt.Errorf("latency under load: %w", err))
			}
		case scenario.TestMTUProbe:
			probe, err := measureMTUProbe(mctx, tb, path, st.Params, cell.Params.OverlayMTU)
			cell.MTUProbe = probe
			if err != nil {
				fail(fmt.Errorf("mtu_probe: %w", err))
			}
		case scenario.TestUDPSizes:
			sizes, err := measureUDPSizes(mctx, tb, path, st.Params, cell.Params.OverlayMTU)
			cell.UDPSizes = sizes
			if err != nil {
				fail(fmt.Errorf("udp_sizes: %w", err))
			}
		default:
			fail(fmt.Errorf("unknown test %q", test))
		}
	}
	cell.Meta.CongestionControl = usedCongestion(&cell)
	fail(checkCongestion(st.Params.CongestionControl, cell.Meta.CongestionControl))
	cell.Derived = derive(&cell, method.HeaderOverhead(m, st.Params.Family, st.Params.Options, path.Variant), sp, underlaySpeed(tb, st.Params.Direction, &cell))
	return cell
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

// describe records every device of both namespaces with MTU and offloads.
func describe(tb *testbed.Pair, _ *method.Path) ([]result.Device, error) {
	var all []result.Device
	for _, ep := range tb.Endpoints() {
		devs, err := opDescribe.Call(context.Background(), ep, ep.Side)
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
		if cell.Meta.Extra == nil {
			cell.Meta.Extra = map[string]string{}
		}
		cell.Meta.Extra["line_rate"] = "device speed not read: " + err.Error()
		return nic.LinkSpeed{}
	}
	return ls
}
