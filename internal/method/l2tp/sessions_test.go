package l2tp_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/l2tp"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// answerSessions makes r answer "ip l2tp" as the kernel does for any
// number of sessions: each creates its l2tpeth device (argument name),
// deleting the tunnel removes them all.
func answerSessions(r *testbedtest.Recorder) {
	var devs []string
	r.AnswerCommands(func(argv []string) testbedtest.Answer {
		switch {
		case slices.Equal(argv[:4], []string{"ip", "l2tp", "add", "session"}):
			dev := argv[slices.Index(argv, "name")+1]
			devs = append(devs, dev)
			_ = r.Know(dev, "l2tp")
		case slices.Equal(argv[:4], []string{"ip", "l2tp", "del", "tunnel"}):
			for _, d := range devs {
				r.Forget(d)
			}
			devs = nil
		}
		return testbedtest.Answer{}
	})
}

// TestL2TPv3TunnelsPlans sets l2tpv3 up with three sessions and tears it
// down on two recording endpoints, per family and encapsulation, and
// compares what it did with testdata/l2tpv3-<name>-<family>-tunnels3.golden
// (rewrite with -update): session 0 creates the tunnel, the middle one is
// the single tunnel's session, each has its own session ID and device.
func TestL2TPv3TunnelsPlans(t *testing.T) {
	t.Parallel()
	m := l2tp.L2TPv3{}
	for _, tt := range []struct {
		name string
		opts map[string]string
	}{
		{"udp", nil},
		{"ip", map[string]string{"encap": "ip"}},
	} {
		for _, family := range m.Families() {
			name := "l2tpv3-" + tt.name + "-" + family + "-tunnels3"
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				rec := methodtest.RecordEnv(m, family, tt.opts)
				rec.Env.Tunnels = 3
				answerSessions(rec.A)
				answerSessions(rec.B)
				testbedtest.Golden(t, name, methodtest.Record(t, m, rec), *update)
			})
		}
	}
}

// TestL2TPv3Grow: a scaled Setup times each session's add on each side,
// Grow adds session N (to the tunnel, which is there: no second "add
// tunnel"), and Teardown waits for its device too.
func TestL2TPv3Grow(t *testing.T) {
	t.Parallel()
	m := l2tp.L2TPv3{}
	for _, n := range []int{1, 3} {
		rec := methodtest.RecordEnv(m, method.IPv4, nil)
		rec.Env.Tunnels = n
		answerSessions(rec.A)
		answerSessions(rec.B)
		path, err := m.Setup(t.Context(), rec.Env)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int]int{1: 0, 3: 6}[n]; len(path.Adds) != want {
			t.Errorf("%d sessions: %d adds timed, want %d", n, len(path.Adds), want)
		}
		rec.A.Lines()
		rec.B.Lines()
		if _, err := m.Grow(t.Context(), rec.Env); err != nil {
			t.Fatalf("%d sessions: Grow: %v", n, err)
		}
		grown := methodtest.RecordPrefix + "-l2000" + string(rune('0'+n))
		lines := strings.Join(rec.A.Lines(), "\n")
		if !strings.Contains(lines, "add session name "+grown) || strings.Contains(lines, "add tunnel") {
			t.Errorf("%d sessions: Grow did:\n%s\nwant session %s in the tunnel that is there", n, lines, grown)
		}
		if err := m.Teardown(t.Context(), rec.Env); err != nil {
			t.Fatal(err)
		}
		if _, err := rec.A.LinkByName(grown); err == nil {
			t.Errorf("%d sessions: %s left after Teardown", n, grown)
		}
	}
}

// TestL2TPv3TunnelsRefused: more sessions than the address plan holds are
// refused by the scenario's validation, before anything is created.
func TestL2TPv3TunnelsRefused(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"l2tpv3"}
	s.Tunnels = []int{100, 16385}
	err := s.Validate(method.Catalog{R: method.NewRegistry(l2tp.L2TPv3{})})
	want := "tunnels: 16385: l2tpv3 over ipv4 sets up at most 16384 (one tunnel is one session (its own session ID and l2tpeth device) in one L2TPv3 tunnel; the IPv4 address plan 198.19.128.0/17 holds 16384 /31 pairs)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("tunnels 16385: %v, want %q", err, want)
	}
}

// labSessions runs l2tpv3 with three sessions for real: a ping crosses
// the first, the measured and the last session, then the one Grow adds;
// Teardown, twice, leaves the links as they were.
func labSessions(t *testing.T, family string, opts map[string]string) {
	m := l2tp.L2TPv3{}
	methodtest.RequireTunnelKernel(t, m)
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: family, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(family),
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: opts, Tunnels: 3}
	before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
	t.Cleanup(func() {
		for range 2 {
			if err := m.Teardown(context.Background(), env); err != nil {
				t.Errorf("Teardown: %v", err)
			}
		}
		if diff := cmp.Diff(before, [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}); diff != "" {
			t.Errorf("links after teardown (-before +after):\n%s", diff)
		}
	})
	if _, err := m.Setup(context.Background(), env); err != nil {
		t.Fatalf("Setup with 3 sessions: %v", err)
	}
	if _, err := m.Grow(context.Background(), env); err != nil {
		t.Fatalf("Grow: %v", err)
	}
	for i := range 4 {
		a, b := method.ScaleOverlay(family, i, env.Measured())
		methodtest.Ping(t, l, &method.Path{A: a.Addr(), B: b.Addr()})
	}
}
