package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/testbed"
)

// The reconf test (after FD.io CSIT's reconfiguration test;
// docs/measurement.md): while the recover test's UDP request stream and
// an iperf3 TCP stream cross the measured tunnel, the method adds one
// more tunnel (method.Grower) a third of the way through. What the add
// cost the running traffic is the requests lost, the longest time
// without an answer, the effective blocked time (lost times the request
// interval) and the throughput's lowest one-second interval.

// reconfMinInterval is the shortest iperf3 interval that counts as a
// one-second interval for the lowest rate: iperf3's last one can be a
// sliver.
const reconfMinInterval = 0.5

// measureReconf runs the reconf test for p's duration over path: the
// streams from a to b, Grow after a third of it.
func measureReconf(ctx context.Context, tb *testbed.Pair, m method.Method, env *method.Env, path *method.Path, p result.Params) (*result.Reconf, error) {
	g, ok := m.(method.Grower)
	if !ok {
		// Validation refuses it (scenario.GrowCatalog).
		return nil, fmt.Errorf("%s cannot add a tunnel to a running set-up (it is no method.Grower)", m.Name())
	}
	dur := time.Duration(p.Duration * float64(time.Second))
	lead := dur / 3
	ctx, cancel := context.WithTimeout(ctx, dur+60*time.Second)
	defer cancel()
	rec := &result.Reconf{Interval: probeInterval.Seconds(), Tool: rr.Tool + " stream (UDP) and iperf3 (TCP)"}

	echo, err := startEcho(ctx, tb.B, path.B)
	if err != nil {
		return nil, fmt.Errorf("rr echo: %w", err)
	}
	defer echo.stop()
	srv, srvOut, err := startServer(ctx, tb.B, load.Iperf3Server{Bind: path.B, Port: iperf3Port}.Args(), iperf3Port)
	if err != nil {
		return nil, fmt.Errorf("iperf3 server: %w", err)
	}
	defer stop(tb.B, srv)
	exe, err := tb.A.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for rr stream: %w", err)
	}

	// The request stream sends for its lead, then for the rest of the
	// duration (no flap): Grow comes at the end of the lead.
	argv := []string{exe, "rr", "stream", "--addr", path.B.Unmap().String(), "--port", strconv.Itoa(echoPort),
		"--interval", probeInterval.String(), "--lead", lead.String(), "--down", (dur - lead).String()}
	stream, err := startStream(ctx, tb.A, argv)
	if err != nil {
		return nil, fmt.Errorf("rr stream: %w", err)
	}
	client := load.Iperf3Client{Server: path.B, Port: iperf3Port, Duration: dur, Streams: max(p.Streams, 1),
		MSS: p.MSS, Congestion: p.CongestionControl}
	ic := tb.A.Command(ctx, path.Wrap(client.Args())...)
	var iout, ierr bytes.Buffer
	ic.Stdout, ic.Stderr = &iout, &ierr
	icErr := tb.A.Start(ic)

	var growErr error
	select {
	case <-time.After(lead):
		start := time.Now()
		rec.How, growErr = g.Grow(ctx, env)
		rec.Took = time.Since(start).Seconds()
		if growErr != nil {
			growErr = fmt.Errorf("grow %s: %w", m.Name(), growErr)
		}
	case <-ctx.Done():
		growErr = context.Cause(ctx)
	}

	var thrErr error
	if icErr != nil {
		thrErr = fmt.Errorf("iperf3 client: %w", icErr)
	} else {
		waitErr := ic.Wait()
		tb.A.Forget(ic)
		thr, perr := load.ParseIperf3(iout.Bytes())
		switch {
		case perr != nil:
			thrErr = fmt.Errorf("iperf3 client %q: %w (stderr: %s; server: %s)", joinArgs(ic.Args), errors.Join(waitErr, perr), trim(ierr.String()), trim(srvOut.String()))
		case waitErr != nil:
			thrErr = fmt.Errorf("iperf3 client %q: %w: %s", joinArgs(ic.Args), waitErr, trim(ierr.String()))
		}
		if perr == nil {
			rec.BitsPerSecond, rec.MinIntervalBitsPerSecond = thr.BitsPerSecond, lowestInterval(thr.Intervals)
		}
	}

	r, streamErr := stream.wait()
	if r != nil {
		fillReconf(rec, r)
		if r.Error != "" {
			streamErr = errors.Join(streamErr, fmt.Errorf("rr stream: %s", r.Error))
		}
	}
	if err := errors.Join(growErr, streamErr, thrErr); err != nil {
		rec.Error = err.Error()
		return rec, err
	}
	return rec, nil
}

// fillReconf records what the request stream saw: the requests sent and
// lost, the longest time without an answer, and the effective blocked
// time, Lost x Interval (CSIT's loss over offered load: the time the
// tunnel carried nothing at the offered rate).
func fillReconf(rec *result.Reconf, r *rr.StreamReport) {
	if r.Interval > 0 {
		rec.Interval = r.Interval
	}
	rec.Sent, rec.Lost, rec.Outage = r.Sent, r.Lost, r.Outage
	rec.Blocked = float64(r.Lost) * rec.Interval
}

// lowestInterval is the lowest rate of the intervals at least
// reconfMinInterval long (0 with none).
func lowestInterval(ivs []result.Interval) float64 {
	low, found := 0.0, false
	for _, iv := range ivs {
		if iv.Omitted || iv.End-iv.Start < reconfMinInterval {
			continue
		}
		if !found || iv.BitsPerSecond < low {
			low, found = iv.BitsPerSecond, true
		}
	}
	return low
}
