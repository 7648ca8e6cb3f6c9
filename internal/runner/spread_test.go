package runner

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
)

// TestParallelTargets: without spread every process sends to the
// measured tunnel's side-b address; with it, process i sends to side b's
// address of tunnel SpreadTunnels(N, K)[i], the measured tunnel's being
// the single tunnel's overlay address.
func TestParallelTargets(t *testing.T) {
	path := &method.Path{B: netip.MustParseAddr("198.19.0.2")}
	p := result.Params{Family: "ipv4", Tunnels: 100}
	addrs, idx := parallelTargets(path, p, 3)
	if idx != nil || !cmp.Equal(addrs, []netip.Addr{path.B, path.B, path.B}, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })) {
		t.Errorf("without spread: %v over %v, want the measured tunnel's address thrice", addrs, idx)
	}
	p.Spread = true
	addrs, idx = parallelTargets(path, p, 4)
	want := []string{"198.19.128.97", "198.19.128.99", "198.19.0.2", "198.19.128.103"}
	var got []string
	for _, a := range addrs {
		got = append(got, a.String())
	}
	if diff := cmp.Diff(want, got); diff != "" || !cmp.Equal(idx, []int{48, 49, 50, 51}) {
		t.Errorf("spread over 100: tunnels %v, addresses (-want +got):\n%s", idx, diff)
	}
	p.Family = "ipv6"
	path.B = netip.MustParseAddr("2001:2:0:1::2")
	addrs, _ = parallelTargets(path, p, 2)
	if addrs[0].String() != "2001:2:0:8031::2" || addrs[1] != path.B {
		t.Errorf("ipv6 spread over 100, 2 processes: %v, want tunnel 49's side b (2001:2:0:8031::2) and the measured one's", addrs)
	}
}
