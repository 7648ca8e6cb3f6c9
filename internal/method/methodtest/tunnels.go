package methodtest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// SetupTunnels is Setup with n tunnels (Env.Tunnels, the tunnels
// dimension): it builds a testbed, sets m up with n tunnels, and in
// t.Cleanup tears it down twice and checks that the links of both
// namespaces are as they were before.
func SetupTunnels(t testing.TB, m method.Method, family string, mtu, n int, opts map[string]string) (*localns.Local, *method.Env, *method.Path) {
	t.Helper()
	l := testbedtest.New(t, mtu)
	env := &method.Env{
		A: l.A, B: l.B, Family: family, UnderlayMTU: mtu,
		OverlayMTU: mtu - m.Overhead(family),
		Prefix:     testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: opts, Tunnels: n,
	}
	before := [][]string{LinkState(t, l.A), LinkState(t, l.B)}
	ctx := context.Background()
	path, err := m.Setup(ctx, env)
	t.Cleanup(func() {
		if err := m.Teardown(ctx, env); err != nil {
			t.Errorf("%s Teardown: %v", m.Name(), err)
		}
		if err := m.Teardown(ctx, env); err != nil {
			t.Errorf("%s second Teardown: %v", m.Name(), err)
		}
		after := [][]string{LinkState(t, l.A), LinkState(t, l.B)}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("links after %s teardown with %d tunnels (-before +after):\n%s", m.Name(), n, diff)
		}
	})
	if err != nil {
		t.Fatalf("%s Setup with %d tunnels: %v", m.Name(), n, err)
	}
	return l, env, path
}
