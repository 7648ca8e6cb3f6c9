package method_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
)

// TestScaleOverlay: the measured tunnel keeps the single tunnel's
// addresses, the others get distinct pairs inside the scale blocks, up
// to the plan's maximum.
func TestScaleOverlay(t *testing.T) {
	for _, fam := range []string{method.IPv4, method.IPv6} {
		block := method.ScaleBlock4
		if fam == method.IPv6 {
			block = method.ScaleBlock6
		}
		n := method.MaxScaleTunnels(fam)
		measured := method.MeasuredTunnel(n)
		seen := map[netip.Addr]int{}
		for i := range n {
			a, b := method.ScaleOverlay(fam, i, measured)
			if i == measured {
				oa, ob := method.Overlay(fam)
				if a != oa || b != ob {
					t.Errorf("%s: measured tunnel %d has %s %s, want the overlay's %s %s", fam, i, a, b, oa, ob)
				}
				continue
			}
			for _, p := range []netip.Prefix{a, b} {
				if !block.Contains(p.Addr()) {
					t.Fatalf("%s: tunnel %d's %s is outside %s", fam, i, p, block)
				}
				if j, dup := seen[p.Addr()]; dup {
					t.Fatalf("%s: tunnel %d's %s is tunnel %d's too", fam, i, p, j)
				}
				seen[p.Addr()] = i
			}
			if a.Masked() != b.Masked() {
				t.Fatalf("%s: tunnel %d's sides %s and %s are not one subnet", fam, i, a, b)
			}
		}
	}
	a, b := method.ScaleOverlay(method.IPv4, 3, 1)
	if a.String() != "198.19.128.6/31" || b.String() != "198.19.128.7/31" {
		t.Errorf("IPv4 tunnel 3: %s %s", a, b)
	}
	a, b = method.ScaleOverlay(method.IPv6, 300, 1)
	if a.String() != "2001:2:0:812c::1/64" || b.String() != "2001:2:0:812c::2/64" {
		t.Errorf("IPv6 tunnel 300: %s %s", a, b)
	}
}

// TestMeasuredTunnel: the load crosses neither the first nor the last of
// three or more tunnels.
func TestMeasuredTunnel(t *testing.T) {
	for n, want := range map[int]int{0: 0, 1: 0, 2: 1, 3: 1, 100: 50, 10000: 5000} {
		if got := method.MeasuredTunnel(n); got != want {
			t.Errorf("MeasuredTunnel(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestSpreadTunnels: k streams spread over k consecutive tunnels
// centred on the measured one, clear of the first and last entry when
// there is room.
func TestSpreadTunnels(t *testing.T) {
	for _, c := range []struct {
		n, k int
		want []int
	}{
		{1, 1, []int{0}}, {0, 3, []int{0}}, {4, 4, []int{0, 1, 2, 3}}, {4, 1, []int{2}},
		{5, 3, []int{1, 2, 3}}, {100, 4, []int{48, 49, 50, 51}}, {100, 3, []int{49, 50, 51}},
		{3, 9, []int{0, 1, 2}},
	} {
		got := method.SpreadTunnels(c.n, c.k)
		if !slices.Equal(got, c.want) {
			t.Errorf("SpreadTunnels(%d, %d) = %v, want %v", c.n, c.k, got, c.want)
		}
		if !slices.Contains(got, method.MeasuredTunnel(c.n)) {
			t.Errorf("SpreadTunnels(%d, %d) = %v leaves out the measured tunnel %d", c.n, c.k, got, method.MeasuredTunnel(c.n))
		}
	}
}

// TestScaleOfOneTunnel: a method that is no Scaler sets up one tunnel,
// and says so.
func TestScaleOfOneTunnel(t *testing.T) {
	s := method.ScaleOf(method.Native{}, method.IPv4, method.Values{})
	if s.Max != 1 || s.Why == "" {
		t.Errorf("native: %+v, want at most 1 with a reason", s)
	}
}
