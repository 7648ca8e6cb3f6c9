package runner

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/sample"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// procHost is the fake host whose /proc/stat stops being readable after
// statReads reads (never when negative), and whose "tunbench udpgen"
// prints the reports of a small lossless trial.
type procHost struct {
	*fakeHost
	mu        sync.Mutex
	statReads int
}

var errProcGone = errors.New("proc not readable")

func (h *procHost) Call(ctx context.Context, ep *testbed.Endpoint, name string, args []byte) ([]byte, error) {
	if name == "fs.read" {
		var a fileArgs
		if err := testbed.Decode(args, &a); err != nil {
			return nil, err
		}
		if a.Path == "/proc/stat" {
			h.mu.Lock()
			left := h.statReads
			if left > 0 {
				h.statReads--
			}
			h.mu.Unlock()
			if left == 0 {
				return nil, errProcGone
			}
		}
	}
	return h.fakeHost.Call(ctx, ep, name, args)
}

func (h *procHost) Start(ep *testbed.Endpoint, c *testbed.Cmd) (testbed.Proc, error) {
	if len(c.Args) < 3 || c.Args[1] != "udpgen" {
		return h.fakeHost.Start(ep, c)
	}
	h.fakeHost.mu.Lock()
	h.fakeHost.pid++
	p := &fakeProc{pid: 1000 + h.fakeHost.pid, done: make(chan struct{})}
	h.fakeHost.mu.Unlock()
	switch c.Args[2] {
	case "recv":
		fmt.Fprintln(c.Stderr, "listening")
		fmt.Fprintln(c.Stdout, `{"received":1000,"bytes":64000,"seconds_s":1,"delay_p50_us":20}`)
		// Exits a moment after the sender, as the real receiver does.
		time.AfterFunc(200*time.Millisecond, func() { p.exit(nil) })
	case "send":
		fmt.Fprintln(c.Stdout, `{"sent":1000,"bytes":64000,"seconds_s":1}`)
		time.AfterFunc(100*time.Millisecond, func() { p.exit(nil) })
	}
	return p, nil
}

// procPair is a pair on one procHost, with tunbench's path known.
func procPair(t *testing.T, statReads int) *testbed.Pair {
	t.Helper()
	h := &procHost{fakeHost: newFakeBed(t).host, statReads: statReads}
	a := testbed.NewEndpoint("a", "fake", "fk-a", h)
	b := testbed.NewEndpoint("b", "fake", "fk-b", h)
	a.Addr4, b.Addr4 = localns.UnderlayA4, localns.UnderlayB4
	a.Exe, b.Exe = "tunbench", "tunbench"
	return testbed.NewPair(a, b, t.TempDir(), func() error { return nil })
}

// The window measures the seconds after the warm-up, and what goes wrong
// with the CPU sampler comes back from end: never a record without its
// reason, never a failure hidden.
func TestWindowSampler(t *testing.T) {
	for _, tc := range []struct {
		name      string
		statReads int // /proc/stat reads that succeed; -1 all
		wantErr   string
	}{
		{name: "measured", statReads: -1},
		{name: "does not start", statReads: 0, wantErr: "start cpu sampler: "},
		{name: "fails when stopped", statReads: 1, wantErr: "cpu sampler: stop cpu sampler: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := procPair(t, tc.statReads)
			sp := &span{}
			w := &window{tb: tb, sampler: newCPUSampler(tb, scenario.DirForward), live: tb.A, span: sp}
			start := time.Now()
			w.begin(context.Background(), 300*time.Millisecond)
			if waited := time.Since(start); waited < 300*time.Millisecond {
				t.Errorf("began after %v, before the 300ms warm-up was over", waited)
			}
			time.Sleep(100 * time.Millisecond)
			cpu, err := w.end()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("end: %v", err)
				}
				if cpu == nil || cpu.Split != sample.SplitApproximate {
					t.Fatalf("cpu = %+v, want a record whose split is %q (both ends on one machine)", cpu, sample.SplitApproximate)
				}
				if !sp.ok || !sp.stop.After(sp.start) {
					t.Errorf("span ok=%v from %v to %v: want the underlay counted over the window", sp.ok, sp.start, sp.stop)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || !errors.Is(err, errProcGone) {
				t.Fatalf("end: error %v, want one starting %q that wraps %q", err, tc.wantErr, errProcGone)
			}
			if cpu != nil {
				t.Errorf("cpu = %+v with the sampler failing, want none", cpu)
			}
		})
	}
}

// A measurement interrupted during its warm-up measures nothing and says
// nothing: the interrupt is the load test's to report.
func TestWindowInterruptedWarmup(t *testing.T) {
	tb := procPair(t, -1)
	sp := &span{}
	w := &window{tb: tb, sampler: newCPUSampler(tb, scenario.DirForward), live: tb.A, span: sp}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	w.begin(ctx, time.Minute)
	cpu, err := w.end()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("interrupted warm-up took %v", d)
	}
	if cpu != nil || err != nil || sp.ok {
		t.Errorf("got cpu %+v, error %v, span ok %v: want nothing measured", cpu, err, sp.ok)
	}
}

// A UDP trial whose CPU could not be sampled fails with the sampler's
// reason and keeps the figures it measured; it used to pass with no CPU.
func TestUDPTrialWithoutCPUFails(t *testing.T) {
	path := &method.Path{A: netip.MustParseAddr("198.18.0.1"), B: netip.MustParseAddr("198.18.0.2")}
	for _, tc := range []struct {
		name      string
		statReads int
		wantErr   string
	}{
		{name: "sampled", statReads: -1},
		{name: "sampler does not start", statReads: 0, wantErr: "start cpu sampler: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := procPair(t, tc.statReads)
			trial, err := udpTrial(context.Background(), tb, path, scenario.DirForward, 18, 0, time.Second)
			if trial == nil || trial.Sent != 1000 || trial.Received != 1000 || trial.LossPercent != 0 {
				t.Fatalf("trial = %+v, want 1000 datagrams sent and received", trial)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("trial: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) || !errors.Is(err, errProcGone) {
				t.Fatalf("trial error %v, want one starting %q that wraps %q", err, tc.wantErr, errProcGone)
			}
		})
	}
}

// A UDP trial keeps the sampler's whole record, as the TCP tests do: the
// whole host's busy % and, beside the generator, the tunnel daemons of
// each side, whose CPU counts in that side's cores.
func TestUDPTrialRecordsDaemonCPU(t *testing.T) {
	path := &method.Path{A: netip.MustParseAddr("198.18.0.1"), B: netip.MustParseAddr("198.18.0.2"),
		Daemons: []method.Daemon{{Side: "a", Role: "wireguard-go", PID: 4242}, {Side: "b", Role: "wireguard-go", PID: 4343}}}
	for _, dir := range []string{scenario.DirForward, scenario.DirReverse} {
		t.Run(dir, func(t *testing.T) {
			tb := procPair(t, -1)
			trial, err := udpTrial(context.Background(), tb, path, dir, 18, 0, time.Second)
			if err != nil {
				t.Fatalf("trial: %v", err)
			}
			c := trial.CPU
			if c == nil || len(c.Samples) == 0 || c.BusyAvg <= 0 || c.BusyMax < c.BusyMin {
				t.Fatalf("trial CPU = %+v, want the whole host's busy samples", c)
			}
			want := map[string]string{"udpgen-sender": "sender", "udpgen-receiver": "receiver",
				"wireguard-go-a": "sender", "wireguard-go-b": "receiver"}
			if dir == scenario.DirReverse {
				want["wireguard-go-a"], want["wireguard-go-b"] = "receiver", "sender"
			}
			got := map[string]string{}
			var snd, rcv float64
			for _, p := range c.Processes {
				got[p.Role] = p.Side
				if p.Side == sample.SideSender {
					snd += p.Cores
				} else {
					rcv += p.Cores
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("processes by side %v, want %v", got, want)
			}
			if trial.SenderCores != snd || trial.ReceiverCores != rcv {
				t.Errorf("trial cores %v/%v, want the tracked processes' %v/%v", trial.SenderCores, trial.ReceiverCores, snd, rcv)
			}
		})
	}
}
