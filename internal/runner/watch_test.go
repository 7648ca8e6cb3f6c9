package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// fakeLinks is a link probe that follows a script of states per side:
// each probe of a side takes its next state and keeps the last one.
type fakeLinks struct {
	mu     sync.Mutex
	states map[string][]string // "up", "down", "gone"
}

func (f *fakeLinks) probe(ep *testbed.Endpoint) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.states[ep.Side]
	st := q[0]
	if len(q) > 1 {
		f.states[ep.Side] = q[1:]
	}
	switch st {
	case "gone":
		return false, errors.New("Link not found")
	case "down":
		return false, nil
	}
	return true, nil
}

// TestWatchUnderlay: the watch faults on a device that was up and went
// down, or vanished, and not on one that was still coming up when the
// measurement began.
func TestWatchUnderlay(t *testing.T) {
	tests := []struct {
		name string
		b    []string // side b's states: at start, then one per tick
		want string   // "" for no fault
	}{
		{"up throughout", []string{"up"}, ""},
		{"coming up when the measurement began", []string{"down", "down", "up"}, ""},
		{"up, then down", []string{"up", "up", "down"}, "b: underlay device tb000000-b went down"},
		{"came up, then went down", []string{"down", "up", "down"}, "b: underlay device tb000000-b went down"},
		{"vanished", []string{"up", "gone"}, "b: underlay device tb000000-b vanished"},
		{"vanished before it came up", []string{"down", "gone"}, "b: underlay device tb000000-b vanished"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeLinks{states: map[string][]string{"a": {"up"}, "b": tt.b}}
			pair := testbed.NewPair(&testbed.Endpoint{Side: "a", Dev: "tb000000-a"}, &testbed.Endpoint{Side: "b", Dev: "tb000000-b"}, "", nil)
			ctx, w := startWatch(context.Background(), pair, &method.Path{}, probes{daemon: liveProbes.daemon, link: f.probe})
			time.Sleep(time.Duration(len(tt.b)+3) * watchInterval)
			err := w.stop()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("fault %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("fault %v, want %q", err, tt.want)
			case tt.want != "" && !strings.Contains(context.Cause(ctx).Error(), tt.want):
				t.Errorf("the measurement's context ended with %v, want the fault", context.Cause(ctx))
			}
		})
	}
}

// TestWatchDaemonLogTail: a daemon that exits during the measurement is
// reported with its log's last lines (what it said before it went), once.
func TestWatchDaemonLogTail(t *testing.T) {
	log := filepath.Join(t.TempDir(), "charon.log")
	lines := "00[DMN] Starting IKE charon daemon\n03[CFG] loaded IKE shared key\n05[KNL] error reading from TUN device\n06[DMN] thread 6 received 11\n07[DMN] killing ourself, received critical signal\n"
	if err := os.WriteFile(log, []byte("first line, not quoted\n"+lines), 0o600); err != nil {
		t.Fatal(err)
	}
	pair := testbed.NewPair(&testbed.Endpoint{Side: "a", Dev: "tb000000-a", NS: -1}, &testbed.Endpoint{Side: "b", Dev: "tb000000-b", NS: -1}, "", nil)
	path := &method.Path{Daemons: []method.Daemon{{Side: "a", Role: "charon", PID: 4242, Log: log}, {Side: "b", Role: "charon", PID: 4343}}}
	gone := func(_ *testbed.Endpoint, pid int) bool { return pid != 4242 }
	up := func(*testbed.Endpoint) (bool, error) { return true, nil }
	_, w := startWatch(context.Background(), pair, path, probes{daemon: gone, link: up})
	time.Sleep(4 * watchInterval)
	err := w.stop()
	want := "a: charon (pid 4242) exited "
	tail := " into the measurement (its log ends: 00[DMN] Starting IKE charon daemon | 03[CFG] loaded IKE shared key | 05[KNL] error reading from TUN device | 06[DMN] thread 6 received 11 | 07[DMN] killing ourself, received critical signal)"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), tail) {
		t.Fatalf("fault %v, want %q...%q", err, want, tail)
	}
	if strings.Count(err.Error(), "charon") != strings.Count(want+tail, "charon") {
		t.Errorf("fault %v: want the exit said once, for side a only", err)
	}
}

// TestWatchDaemonExitStatus: a daemon tunbench started is reported with
// how its process ended (the signal that killed it); one the /proc probe
// finds gone while its process still runs is not a fault (the probe
// failed, not the daemon).
func TestWatchDaemonExitStatus(t *testing.T) {
	pair := testbed.NewPair(&testbed.Endpoint{Side: "a", Dev: "tb000000-a", NS: -1}, &testbed.Endpoint{Side: "b", Dev: "tb000000-b", NS: -1}, "", nil)
	killed := func() error {
		return &method.ExitedError{Side: "a", Role: "charon", PID: 4242, Status: errors.New("signal: killed")}
	}
	running := func() error { return nil }
	path := &method.Path{Daemons: []method.Daemon{
		{Side: "a", Role: "charon", PID: 4242, Exit: killed},
		{Side: "b", Role: "charon", PID: 4343, Exit: running},
	}}
	gone := func(*testbed.Endpoint, int) bool { return false }
	up := func(*testbed.Endpoint) (bool, error) { return true, nil }
	_, w := startWatch(context.Background(), pair, path, probes{daemon: gone, link: up})
	time.Sleep(4 * watchInterval)
	err := w.stop()
	if err == nil || !strings.Contains(err.Error(), "a: charon (pid 4242) exited ") || !strings.Contains(err.Error(), "into the measurement (signal: killed)") {
		t.Fatalf("fault %v, want side a's charon killed by a signal", err)
	}
	if strings.Contains(err.Error(), "4343") {
		t.Errorf("fault %v: side b's charon still runs (its probe failed)", err)
	}
}
