package runner

import (
	"net"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestRouteCongestion, in real namespaces: the connected routes get the
// congctl metric, a route created with it keeps it, and a route with an
// encapsulation created without it is left alone and reported.
func TestRouteCongestion(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), MTU: 1500, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pair := l.Pair()
	a := pair.A
	a.RouteCongestion = "cubic"
	lo, err := a.NL.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	seg := func(dst string, cc string) *netlink.Route {
		_, n, _ := net.ParseCIDR(dst)
		return &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: n, Congctl: cc,
			Encap: &netlink.SEG6Encap{Mode: 1, Segments: []net.IP{net.ParseIP("2001:2::99")}}}
	}
	for _, r := range []*netlink.Route{seg("198.19.1.0/24", "cubic"), seg("198.19.2.0/24", "")} {
		if err := a.NL.RouteAdd(r); err != nil {
			t.Skipf("cannot add a seg6 route here: %v", err)
		}
	}
	skipped, err := routeCongestion(pair)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "198.19.2.0/24") {
		t.Errorf("left alone: %q, want the seg6 route without congctl", skipped)
	}
	routes, err := a.NL.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	var connected int
	for _, r := range routes {
		want := "cubic"
		if r.Dst.String() == "198.19.2.0/24" {
			want = ""
		}
		if r.Congctl != want {
			t.Errorf("route %s: congctl %q, want %q", r, r.Congctl, want)
		}
		if r.Encap == nil {
			connected++
		} else if r.Encap.Type() != 5 /* LWTUNNEL_ENCAP_SEG6 */ {
			t.Errorf("route %s lost its encapsulation", r)
		}
	}
	if connected == 0 {
		t.Errorf("no connected route in %v", routes)
	}
	// Side b has no RouteCongestion: its routes stay as they were.
	routes, err = pair.B.NL.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Congctl != "" {
			t.Errorf("side b's route %s got congctl %q", r, r.Congctl)
		}
	}
}

// TestUsedCongestion: what the sockets reported, once each, and a
// mismatch with what was asked fails.
func TestUsedCongestion(t *testing.T) {
	c := &result.Cell{
		Throughput: &result.Throughput{SenderCongestion: "cubic", ReceiverCongestion: "cubic"},
		Latency:    &result.Latency{Congestion: "cubic"},
	}
	if got := usedCongestion(c); got != "cubic" {
		t.Errorf("used %q, want cubic", got)
	}
	if err := checkCongestion("cubic", "cubic"); err != nil {
		t.Error(err)
	}
	c.Latency.Congestion = "bbr"
	used := usedCongestion(c)
	if used != "cubic+bbr" {
		t.Errorf("used %q, want cubic+bbr", used)
	}
	if err := checkCongestion("cubic", used); err == nil || !strings.Contains(err.Error(), "asked for cubic, but the connections used cubic+bbr") {
		t.Errorf("mismatch: %v", err)
	}
	if err := checkCongestion("", "bbr"); err != nil {
		t.Errorf("the hosts' default, whatever it is, is no mismatch: %v", err)
	}
}
