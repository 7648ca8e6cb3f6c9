package sample

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/result"
)

var (
	// Per core and read: 100 ticks, half of them busy.
	stepHalf = Times{User: 30, System: 10, Softirq: 10, Idle: 50}
	// Per core and read: 90% busy.
	stepHigh = Times{User: 70, System: 10, Softirq: 10, Idle: 10}
)

// newManualSampler returns a sampler on a fake /proc whose clock and ticks
// the test drives itself: the sampling goroutine never ticks.
func newManualSampler(f *fakeProc, interval time.Duration) *Sampler {
	s := NewSampler(f, interval)
	s.now = f.clock
	s.ticker = func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }
	return s
}

// step advances the fake clock by d and takes one sample, as the
// sampling goroutine would.
func step(t *testing.T, s *Sampler, f *fakeProc, d time.Duration) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	f.now = f.now.Add(d)
	if err := s.tick(); err != nil {
		t.Fatalf("tick: %v", err)
	}
}

func mustStop(t *testing.T, s *Sampler) *result.CPU {
	t.Helper()
	cpu, err := s.Stop()
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	return cpu
}

func TestSamplerMeasurement(t *testing.T) {
	f := newFakeProc(2, stepHalf)
	f.procs[100] = &fakePID{comm: "iperf3", du: 20, ds: 10, start: 5000, readsLeft: -1}
	// Read when tracked, at Start and at the first tick; gone after that.
	f.procs[200] = &fakePID{comm: "wireguard-go", du: 5, ds: 5, start: 6000, readsLeft: 3}
	s := newManualSampler(f, time.Second)
	if err := s.TrackProcess("iperf3-client", SideSender, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.TrackProcess("wireguard-go", SideReceiver, 200); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	step(t, s, f, time.Second)
	f.step = stepHigh
	step(t, s, f, time.Second)
	f.step = stepHalf
	step(t, s, f, time.Second)
	f.now = f.now.Add(300 * time.Millisecond) // a short tail: not a sample of its own
	got := mustStop(t, s)

	const wall = 3.3
	want := &result.CPU{
		Interval: 1, Cores: 2,
		BusyMin: 50, BusyAvg: (50 + 90 + 50) / 3.0, BusyMax: 90,
		// Four reads after the first: 3 half-busy, 1 at 90%.
		PerCore: []result.CoreUsage{
			{CPU: 0, User: 40, System: 10, Softirq: 10, Idle: 40},
			{CPU: 1, User: 40, System: 10, Softirq: 10, Idle: 40},
		},
		Samples: []result.CPUSample{
			{T: 1, User: 30, System: 10, Softirq: 10, Busy: 50},
			{T: 2, User: 70, System: 10, Softirq: 10, Busy: 90},
			{T: 3, User: 30, System: 10, Softirq: 10, Busy: 50},
		},
		Processes: []result.ProcessCPU{
			// 4 reads after Start at 20+10 ticks each.
			{Role: "iperf3-client", Side: SideSender, PID: 100, User: 0.8, System: 0.4, Cores: 1.2 / wall},
			// Exited after one read past Start: its time stops there.
			{Role: "wireguard-go", Side: SideReceiver, PID: 200, User: 0.05, System: 0.05, Cores: 0.1 / wall},
		},
		Split:         SplitApproximate,
		SenderCores:   1.2 / wall,
		ReceiverCores: 0.1 / wall,
		SoftirqCores:  0.2, // 10% of 2 cores
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("Stop() mismatch (-want +got):\n%s", diff)
	}
	wantTracked := []Tracked{
		{Role: "iperf3-client", Side: SideSender, PID: 100},
		{Role: "wireguard-go", Side: SideReceiver, PID: 200, Exited: true},
	}
	if diff := cmp.Diff(wantTracked, s.Tracked()); diff != "" {
		t.Errorf("Tracked() mismatch (-want +got):\n%s", diff)
	}
}

func TestSamplerTail(t *testing.T) {
	t.Run("half an interval or more is a sample", func(t *testing.T) {
		f := newFakeProc(2, stepHalf)
		s := newManualSampler(f, time.Second)
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		step(t, s, f, time.Second)
		f.now = f.now.Add(600 * time.Millisecond)
		cpu := mustStop(t, s)
		if len(cpu.Samples) != 2 || cpu.Samples[1].T != 1.6 {
			t.Errorf("samples = %+v, want 2, the last at 1.6 s", cpu.Samples)
		}
	})
	t.Run("a measurement shorter than one interval has one sample", func(t *testing.T) {
		f := newFakeProc(2, stepHigh)
		s := newManualSampler(f, time.Second)
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.now = f.now.Add(200 * time.Millisecond)
		cpu := mustStop(t, s)
		if len(cpu.Samples) != 1 || cpu.BusyMin != 90 || cpu.BusyAvg != 90 || cpu.BusyMax != 90 {
			t.Errorf("got samples %+v busy %v/%v/%v, want one sample at 90%%", cpu.Samples, cpu.BusyMin, cpu.BusyAvg, cpu.BusyMax)
		}
	})
	t.Run("no tick elapsed: no sample, no NaN", func(t *testing.T) {
		f := newFakeProc(2, Times{})
		s := newManualSampler(f, time.Second)
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		cpu := mustStop(t, s)
		if len(cpu.Samples) != 0 || cpu.BusyAvg != 0 || cpu.PerCore[0].Idle != 0 {
			t.Errorf("got %+v, want no samples and zero figures", cpu)
		}
	})
}

func TestSamplerTrackDuringMeasurement(t *testing.T) {
	f := newFakeProc(1, stepHalf)
	f.procs[300] = &fakePID{comm: "iperf3", du: 10, start: 7000, readsLeft: -1}
	s := newManualSampler(f, time.Second)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	step(t, s, f, time.Second)
	if err := s.TrackProcess("iperf3-server", SideReceiver, 300); err != nil {
		t.Fatal(err)
	}
	step(t, s, f, time.Second)
	step(t, s, f, time.Second)
	cpu := mustStop(t, s)
	// Tracked at 1 s, read at 2 s, 3 s and Stop (3 s): 3 reads of 10 ticks
	// over 2 s.
	p := cpu.Processes[0]
	if p.User != 0.3 || p.Cores != 0.15 || cpu.ReceiverCores != 0.15 || cpu.SenderCores != 0 {
		t.Errorf("process %+v, receiver %v, sender %v: want 0.3 s user, 0.15 cores on the receiver", p, cpu.ReceiverCores, cpu.SenderCores)
	}
}

func TestSamplerPIDReused(t *testing.T) {
	f := newFakeProc(1, stepHalf)
	f.procs[400] = &fakePID{comm: "iperf3", du: 10, start: 8000, readsLeft: -1}
	s := newManualSampler(f, time.Second)
	if err := s.TrackProcess("iperf3-client", SideSender, 400); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	step(t, s, f, time.Second)
	f.procs[400] = &fakePID{comm: "other", du: 50, start: 9000, readsLeft: -1}
	step(t, s, f, time.Second)
	cpu := mustStop(t, s)
	if p := cpu.Processes[0]; p.User != 0.1 || !s.Tracked()[0].Exited {
		t.Errorf("process %+v exited=%v: want 0.1 s user from before the PID was reused, exited", p, s.Tracked()[0].Exited)
	}
}

func TestSamplerGoroutine(t *testing.T) {
	f := newFakeProc(2, stepHalf)
	const interval = 5 * time.Millisecond
	f.tick = interval // the fake clock moves one interval per read
	s := NewSampler(f, interval)
	s.now = f.clock
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitReads(t, s, f, 4)
	cpu := mustStop(t, s)
	if len(cpu.Samples) < 3 {
		t.Fatalf("%d samples, want at least 3", len(cpu.Samples))
	}
	for i, x := range cpu.Samples {
		if x.Busy != 50 || x.T <= 0 || (i > 0 && x.T <= cpu.Samples[i-1].T) {
			t.Errorf("sample %d = %+v, want 50%% busy at increasing T", i, x)
		}
	}
	if cpu.Interval != interval.Seconds() {
		t.Errorf("Interval = %v, want %v", cpu.Interval, interval.Seconds())
	}
}

// waitReads waits until the sampler has read /proc/stat n times.
func waitReads(t *testing.T, s *Sampler, f *fakeProc, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		reads := f.reads
		s.mu.Unlock()
		if reads >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sampler read /proc/stat %d times in 5 s, want %d", reads, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSamplerReadErrorStopsSampling(t *testing.T) {
	f := newFakeProc(2, stepHalf)
	s := NewSampler(f, time.Millisecond)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("input/output error")
	s.mu.Lock()
	f.fail = broken
	s.mu.Unlock()
	// The goroutine gives up at its next tick; Stop reports why.
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		failed := s.err != nil
		s.mu.Unlock()
		if failed || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	_, err := s.Stop()
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), "/proc/stat") {
		t.Errorf("Stop() error = %v, want one naming /proc/stat and wrapping %v", err, broken)
	}
}

func TestSamplerContextEndsSampling(t *testing.T) {
	f := newFakeProc(2, stepHalf)
	f.tick = time.Millisecond
	s := NewSampler(f, time.Millisecond)
	s.now = f.clock
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if cpu := mustStop(t, s); cpu.Cores != 2 {
		t.Errorf("Cores = %d after cancelled context, want 2", cpu.Cores)
	}
}

func TestSamplerMisuse(t *testing.T) {
	f := newFakeProc(1, stepHalf)
	f.procs[100] = &fakePID{comm: "iperf3", start: 1, readsLeft: -1}
	s := newManualSampler(f, time.Second)
	if _, err := s.Stop(); err == nil {
		t.Error("Stop before Start succeeded")
	}
	if err := s.TrackProcess("iperf3", "a", 100); err == nil {
		t.Error("TrackProcess with side \"a\" succeeded")
	}
	if err := s.TrackProcess("iperf3", SideSender, 0); err == nil {
		t.Error("TrackProcess of pid 0 succeeded")
	}
	if err := s.TrackProcess("iperf3", SideSender, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.TrackProcess("again", SideSender, 100); err == nil {
		t.Error("tracking a pid twice succeeded")
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
	mustStop(t, s)
	if _, err := s.Stop(); err == nil {
		t.Error("second Stop succeeded")
	}
	if err := NewSampler(f, 0).Start(context.Background()); err == nil {
		t.Error("Start with a zero interval succeeded")
	}
}

func TestBackground(t *testing.T) {
	f := newFakeProc(2, stepHigh)
	busy, err := Background(context.Background(), f, time.Millisecond)
	if err != nil || busy != 90 {
		t.Errorf("Background = %v, %v; want 90, nil", busy, err)
	}
	if !IsBusy(busy) || IsBusy(BusyThreshold) || IsBusy(3) {
		t.Errorf("IsBusy: 90%% should be busy, %v%% and 3%% not", BusyThreshold)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Background(ctx, f, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Background with cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := Background(context.Background(), newFakeProc(2, Times{}), time.Millisecond); err == nil {
		t.Error("Background with no ticks elapsed succeeded")
	}
}
