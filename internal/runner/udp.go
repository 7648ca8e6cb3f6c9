package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/sample"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/udpgen"
)

// measureUDPSizes runs the udp_sizes test: for every frame size, the
// generator at the unlimited or fixed rate, or the NDR/PDR search. A size
// that fails is recorded with its error and the sweep goes on.
func measureUDPSizes(ctx context.Context, tb *testbed.Pair, path *method.Path, p result.Params, overlayMTU int) ([]result.UDPSize, error) {
	u := p.UDP
	if u == nil {
		return nil, errors.New("udp_sizes: no udp settings in the cell")
	}
	dur := time.Duration(p.Duration * float64(time.Second))
	trialDur := time.Duration(u.Trial * float64(time.Second))
	var out []result.UDPSize
	var errs []error
	ip := 20
	if p.Family == "ipv6" {
		ip = 40
	}
	for _, frame := range u.FrameSizes {
		if ctx.Err() != nil {
			errs = append(errs, context.Cause(ctx))
			break
		}
		payload := scenario.UDPPayload(frame, p.Family)
		sz := result.UDPSize{FrameBytes: frame, PayloadBytes: payload, Fragmented: payload+8+ip > overlayMTU}
		trial := func(rate float64, d time.Duration) (*result.UDPTrial, error) {
			t, err := udpTrial(ctx, tb, path, p.Direction, payload, rate, d)
			if t != nil && u.Rate == scenario.UDPSearch {
				sz.Trials = append(sz.Trials, *t)
			}
			return t, err
		}
		var err error
		switch u.Rate {
		case scenario.UDPSearch:
			err = search(&sz, trial, dur, trialDur, u.SearchSteps)
		case "fixed":
			sz.Result, err = trial(u.OfferedBitsPerSecond, dur)
		default:
			sz.Result, err = trial(0, dur)
		}
		if err != nil {
			sz.Error = err.Error()
			errs = append(errs, fmt.Errorf("frame %d (payload %d): %w", frame, payload, err))
		}
		out = append(out, sz)
	}
	return out, errors.Join(errs...)
}

// search finds the NDR and PDR of one size: an unlimited trial gives the
// top rate, then two binary searches below it.
func search(sz *result.UDPSize, trial func(float64, time.Duration) (*result.UDPTrial, error), first, each time.Duration, steps int) error {
	top, err := trial(0, first)
	if err != nil {
		return err
	}
	sz.Result = top
	hi := top.SentBitsPerSec
	run := func(rate float64) (float64, float64, error) {
		t, err := trial(rate, each)
		if err != nil {
			return 0, 0, err
		}
		return t.LossPercent, t.SentBitsPerSec, nil
	}
	ndr, err := udpgen.Search(0, hi, 0, steps, run)
	sz.NDRBitsPerSecond = ndr.Rate
	if err != nil {
		return fmt.Errorf("no-drop rate: %w", err)
	}
	pdr, err := udpgen.Search(ndr.Rate, hi, scenario.PDRLossPercent, steps, run)
	sz.PDRBitsPerSecond = pdr.Rate
	if err != nil {
		return fmt.Errorf("partial-drop rate: %w", err)
	}
	return nil
}

// syncBuffer is a bytes.Buffer safe for a writer process and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// udpTrial runs one generator trial from a to b (b to a with direction
// reverse) at rate payload bits per second (0 unlimited) for d.
func udpTrial(ctx context.Context, tb *testbed.Pair, path *method.Path, direction string, payload int, rate float64, d time.Duration) (*result.UDPTrial, error) {
	src, dst, to := tb.A, tb.B, path.B
	if direction == scenario.DirReverse {
		src, dst, to = tb.B, tb.A, path.A
	}
	rexe, err := dst.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for udpgen: %w", err)
	}
	sexe, err := src.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for udpgen: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	recv := load.UDPGenReceiver{Bind: to, Port: udpgen.DefaultPort, Timeout: d + 3*time.Second, Exe: rexe}
	rcmd := dst.Command(ctx, recv.Args()...)
	var rout bytes.Buffer
	rerr := &syncBuffer{}
	rcmd.Stdout, rcmd.Stderr = &rout, rerr
	if err := dst.Start(rcmd); err != nil {
		return nil, fmt.Errorf("udpgen receiver: %w", err)
	}
	rdone := make(chan error, 1)
	go func() { rdone <- rcmd.Wait() }()
	defer func() {
		_ = rcmd.Kill()
		dst.Forget(rcmd)
	}()
	ready := time.After(5 * time.Second)
wait:
	for !strings.Contains(rerr.String(), "listening") {
		select {
		case err := <-rdone:
			rdone <- err
			return nil, fmt.Errorf("udpgen receiver %q exited before listening: %v: %s", joinArgs(rcmd.Args), err, trim(rerr.String()))
		case <-ready:
			return nil, fmt.Errorf("udpgen receiver %q: not listening after 5s: %s", joinArgs(rcmd.Args), trim(rerr.String()))
		case <-time.After(5 * time.Millisecond):
			continue wait
		}
	}
	sampler := newCPUSampler(tb, direction)
	if err := sampler.TrackProcess(dst, "udpgen-receiver", sample.SideReceiver, rcmd.Pid()); err != nil {
		return nil, fmt.Errorf("account cpu of udpgen receiver: %w", err)
	}
	send := load.UDPGenSender{Server: to, Port: udpgen.DefaultPort, Size: payload, Rate: rate, Duration: d, Exe: sexe}
	scmd := src.Command(ctx, send.Args()...)
	var sout, serr bytes.Buffer
	scmd.Stdout, scmd.Stderr = &sout, &serr
	if err := src.Start(scmd); err != nil {
		return nil, fmt.Errorf("udpgen sender: %w", err)
	}
	if err := sampler.TrackProcess(src, "udpgen-sender", sample.SideSender, scmd.Pid()); err != nil {
		_ = scmd.Kill()
		_ = scmd.Wait()
		src.Forget(scmd)
		return nil, fmt.Errorf("account cpu of udpgen sender: %w", err)
	}
	// The tunnel daemons' CPU is part of the trial's cost, as in the TCP
	// tests.
	if err := trackDaemons(sampler, tb, path, direction); err != nil {
		_ = scmd.Kill()
		_ = scmd.Wait()
		src.Forget(scmd)
		return nil, err
	}
	// No warm-up: the generator's trial is all measured.
	w := &window{tb: tb, sampler: sampler}
	w.begin(ctx, 0)
	swait := scmd.Wait()
	src.Forget(scmd)
	sampler.Exited(src, scmd)
	var rwait error
	select {
	case rwait = <-rdone:
	case <-ctx.Done():
		rwait = context.Cause(ctx)
	}
	cpu, cpuErr := w.end()
	s, r, perr := load.ParseUDPGen(sout.Bytes(), rout.Bytes())
	if perr != nil {
		return nil, fmt.Errorf("%w (sender %v: %s; receiver %v: %s)", perr, swait, trim(serr.String()), rwait, trim(rerr.String()))
	}
	t := load.UDPGenTrial(s, r)
	if src.Host != dst.Host || src.Local() != dst.Local() {
		correctDelay(ctx, &t, src, dst)
	}
	if cpu != nil {
		t.SenderCores, t.ReceiverCores = cpu.SenderCores, cpu.ReceiverCores
		t.CPU = cpu
	}
	// The trial's figures are kept; without its CPU it fails.
	return &t, cpuErr
}

// correctDelay puts the one-way delays of a trial between two hosts on
// one clock: the receiver stamped arrival with its clock and the sender
// its departure with its own, so the measured delay includes the offset
// between the clocks, which is measured over the control connection. When
// it cannot be measured the delays are dropped, never shown wrong.
func correctDelay(ctx context.Context, t *result.UDPTrial, src, dst *testbed.Endpoint) {
	os, us, err1 := testbed.ClockOffset(ctx, src, 8)
	od, ud, err2 := testbed.ClockOffset(ctx, dst, 8)
	if err1 != nil || err2 != nil {
		t.DelayMin, t.DelayP50, t.DelayP99, t.DelayMax, t.DelayMean = 0, 0, 0, 0, 0
		t.DelayNote = result.DelayUnavailable + ": the clock offset between the hosts could not be measured"
		return
	}
	off := float64((od - os).Nanoseconds()) / 1e3
	t.ClockOffset = off
	t.ClockUncertainty = float64((us + ud).Nanoseconds()) / 1e3
	t.DelayMin -= off
	t.DelayP50 -= off
	t.DelayP99 -= off
	t.DelayMax -= off
	if t.DelayMean != 0 {
		t.DelayMean -= off
	}
	t.DelayNote = fmt.Sprintf("corrected by the hosts' clock offset %.0f µs, known within ±%.0f µs", off, t.ClockUncertainty)
}
