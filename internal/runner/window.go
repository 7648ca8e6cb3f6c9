package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/sample"
	"github.com/tunbench/tunbench/internal/testbed"
)

// window is the measured part of a load test: the seconds after the
// warm-up, over which the CPUs are sampled and, for the cost per packet,
// the underlay's counters and the CPUs' cycles are read. A test starts its
// load tools and tracks their processes in the sampler, then
//
//	w := &window{tb: tb, sampler: sampler, live: tb.A, prog: prog, span: sp}
//	w.begin(ctx, warmup)
//	// wait for the load tools
//	cpu, err := w.end()
//
// The live progress runs from begin to end; the span and the sampler
// start when the warm-up is over (not at all when ctx ends first) and stop
// in end, which marks the CPU split and returns the sampler's errors.
type window struct {
	tb      *testbed.Pair
	sampler *cpuSampler
	// live, when not nil, is the endpoint whose transmit rate feeds prog
	// once a second from begin to end.
	live *testbed.Endpoint
	prog *progress
	// span, when not nil, counts the underlay's packets and the CPUs'
	// cycles over the sampled seconds.
	span *span

	stopLive chan struct{}
	liveWG   sync.WaitGroup
	begun    bool  // span begun
	sampling bool  // sampler started
	startErr error // the sampler's, when it did not start
}

// begin starts the live progress, waits out the warm-up (or until ctx
// ends, and then measures nothing), and begins the span and the sampler.
// A sampler that does not start is reported by end.
func (w *window) begin(ctx context.Context, warmup time.Duration) {
	if w.live != nil {
		w.stopLive = make(chan struct{})
		w.liveWG.Add(1)
		go func() {
			defer w.liveWG.Done()
			live(w.live, w.stopLive, w.prog)
		}()
	}
	if warmup > 0 {
		select {
		case <-time.After(warmup):
		case <-ctx.Done():
			return
		}
	}
	if w.span != nil {
		w.span.begin(w.tb)
		w.begun = true
	}
	if err := w.sampler.Start(ctx); err != nil {
		w.startErr = fmt.Errorf("start cpu sampler: %w", err)
		return
	}
	w.sampling = true
}

// end stops the live progress, ends the span and stops the sampler. The
// CPU record is nil when the sampler did not run; its error is the
// sampler's (starting or stopping), nil when the window never began
// because ctx ended during the warm-up. Unless each side has a host of
// its own, both ends share the CPUs and softirq work cannot be attributed
// to one side: the split is marked approximate.
func (w *window) end() (*result.CPU, error) {
	if w.stopLive != nil {
		close(w.stopLive)
		w.liveWG.Wait()
		w.stopLive = nil
	}
	if w.begun {
		// Also when the sampler did not start: the cycle counter is
		// released (without CPU figures there is no cost to compute).
		w.span.end(w.tb)
		w.begun = false
	}
	if !w.sampling {
		return nil, w.startErr
	}
	w.sampling = false
	cpu, err := w.sampler.Stop()
	if err != nil {
		err = fmt.Errorf("cpu sampler: %w", err)
	}
	if cpu != nil && cpu.Split != sample.SplitHosts {
		cpu.Split = sample.SplitApproximate
	}
	return cpu, err
}
