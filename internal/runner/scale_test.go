package runner

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// scaleMethod is fakeMethod setting up N tunnels: it says what one is,
// times three adds, runs a daemon on side a and takes a while to tear
// down.
type scaleMethod struct{ fakeMethod }

func (*scaleMethod) Scale(string, method.Values) method.Scale {
	return method.Scale{Unit: "fake tunnel", Max: 100, Why: "a test's"}
}

func (m *scaleMethod) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	p, err := m.fakeMethod.Setup(ctx, env)
	if err != nil {
		return nil, err
	}
	p.Adds = []time.Duration{3 * time.Millisecond, time.Millisecond, 2 * time.Millisecond}
	// 64 MiB of this process's own, touched and dropped again: what a
	// set-up's peak of tunbench's memory (not a daemon's) is for.
	if env.N() > 1 {
		buf := make([]byte, 64<<20)
		for i := range buf {
			if i%4096 == 0 {
				buf[i] = 1
			}
		}
		runtime.KeepAlive(buf)
	}
	p.Daemons = []method.Daemon{{Side: "a", Role: "faked", PID: 4242}}
	return p, nil
}

func (m *scaleMethod) Teardown(ctx context.Context, env *method.Env) error {
	time.Sleep(30 * time.Millisecond)
	return m.fakeMethod.Teardown(ctx, env)
}

// A cell of more than one tunnel records what they cost in the stored
// cell: its tunnels and what one is, the set-up and the teardown (which
// runs after the tests, before the cell is stored), the adds'
// percentiles, the slab read once on a machine both sides share, the
// daemon's resident memory and tunbench's own, whose peak holds what the
// set-up took; a cell of one tunnel records none.
func TestScaledCellRecordsItsCost(t *testing.T) {
	m, bed := &scaleMethod{}, newFakeBed(t)
	sc := scenario.Default()
	sc.Methods = []string{"fake"}
	sc.Repetitions = 1
	sc.Duration, sc.Omit, sc.Latency = "1s", "0s", "0s"
	sc.Tests = []string{scenario.TestTCPStream}
	sc.Tunnels = []int{1, 4}
	st := &memStore{}
	if _, err := Run(context.Background(), Config{Scenario: sc, Methods: method.NewRegistry(m), Store: st, Bed: bed,
		ID: testbed.NewID(), BackgroundWindow: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if len(st.cells) != 2 {
		t.Fatalf("%d cells stored, want 2", len(st.cells))
	}
	if one := st.cells[0]; one.Scale != nil || one.Status != result.StatusOK {
		t.Errorf("one tunnel: %s %q, scale %+v: want ok, no scale record", one.Status, one.Error, one.Scale)
	}
	c := st.cells[1]
	if c.Status != result.StatusOK || c.Scale == nil {
		t.Fatalf("four tunnels: %s %q, scale %+v: want ok with a scale record", c.Status, c.Error, c.Scale)
	}
	s := *c.Scale
	if s.Tunnels != 4 || s.Unit != "fake tunnel" || s.Adds != 3 || s.AddP50 != 0.002 || math.Abs(s.AddP99-0.00298) > 1e-9 {
		t.Errorf("scale %+v: want 4 fake tunnels, 3 adds, p50 2 ms, p99 2.98 ms", s)
	}
	if s.Setup <= 0 || s.Teardown < 0.03 {
		t.Errorf("set-up %v s, teardown %v s: want both timed, the teardown at least its 30 ms", s.Setup, s.Teardown)
	}
	if !s.SharedKernel || s.SlabAfter-s.SlabBefore != 4096 || s.DaemonRSS != 2048*1024 {
		t.Errorf("memory %+v: want one shared kernel read before and after (4 kB more), 2 MB of daemon", s)
	}
	if want := float64(4096+2048*1024) / 4; s.PerTunnel != want {
		t.Errorf("per tunnel %v bytes, want %v", s.PerTunnel, want)
	}
	// This process and the one agent (pid 777) serving both fake sides
	// (1 MiB resident, 1.5 MiB peak), counted once.
	if s.ToolRSSBefore <= 1<<20 || s.ToolPeakRSS-s.ToolRSSBefore < 60<<20 {
		t.Errorf("tunbench's own memory %d bytes before, peak %d: want the peak at least the set-up's 64 MiB above it",
			s.ToolRSSBefore, s.ToolPeakRSS)
	}
}

func TestMeminfoField(t *testing.T) {
	data := []byte("MemTotal:        8000000 kB\nSlab:             123456 kB\nHugePages_Total:       0\n")
	if v, err := meminfoField(data, "Slab"); err != nil || v != 123456*1024 {
		t.Errorf("Slab = %d, %v; want %d", v, err, 123456*1024)
	}
	if v, err := meminfoField(data, "HugePages_Total"); err != nil || v != 0 {
		t.Errorf("HugePages_Total = %d, %v; want 0", v, err)
	}
	if _, err := meminfoField(data, "VmRSS"); err == nil {
		t.Error("a missing field gave no error")
	}
}

// The reconf record's arithmetic: the effective blocked time is the
// requests lost times their interval; the lowest one-second interval
// leaves out warm-up intervals and iperf3's last sliver.
func TestReconfRecord(t *testing.T) {
	rec := &result.Reconf{Interval: 0.01}
	fillReconf(rec, &rr.StreamReport{Interval: 0.01, Sent: 1000, Answered: 963, Lost: 37, Outage: 0.41})
	if rec.Sent != 1000 || rec.Lost != 37 || rec.Outage != 0.41 || math.Abs(rec.Blocked-0.37) > 1e-12 {
		t.Errorf("record %+v: want 1000 sent, 37 lost, outage 0.41 s, blocked 0.37 s", rec)
	}
	ivs := []result.Interval{
		{Start: 0, End: 1, BitsPerSecond: 1e6, Omitted: true},
		{Start: 1, End: 2, BitsPerSecond: 9e9},
		{Start: 2, End: 3, BitsPerSecond: 4e9},
		{Start: 3, End: 4, BitsPerSecond: 8e9},
		{Start: 4, End: 4.05, BitsPerSecond: 1e8},
	}
	if got := lowestInterval(ivs); got != 4e9 {
		t.Errorf("lowest interval %v, want 4e9 (not the warm-up's, not the last 50 ms)", got)
	}
	if got := lowestInterval(nil); got != 0 {
		t.Errorf("lowest of none %v, want 0", got)
	}
}
