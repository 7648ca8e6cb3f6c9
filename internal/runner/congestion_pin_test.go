package runner

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// routeTo is what "ip route get" says, in namespace ns, of the route to dst.
func routeTo(t *testing.T, ns string, dst netip.Addr) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "route", "get", dst.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s route get %s: %v: %s", ns, dst, err, out)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// TestCongestionOnBothTestbeds: with a congestion control asked for, the
// route every connection of the cell takes to the peer carries it
// (congctl) on both sides, on the local testbed and on remote endpoints
// (agents, as on the ssh testbed), for IPv4 and IPv6: a connection there
// starts with it rather than with the host's default (whose traits, BBR's
// pacing, iperf3's later -C keeps). On the remote hosts it is a host route
// of tunbench's, journalled while it exists; afterwards the host's routes
// are as they were.
func TestCongestionOnBothTestbeds(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	local := testbedtest.New(t, 1500)
	agentBed, remote, _ := testbedtest.AgentPair(t, 1500)
	for _, c := range []struct {
		name string
		l    *localns.Local
		pair *testbed.Pair
	}{{"local", local, local.Pair()}, {"remote", agentBed, remote}} {
		for _, fam := range []string{"ipv4", "ipv6"} {
			path := &method.Path{A: localns.UnderlayA4.Addr(), B: localns.UnderlayB4.Addr()}
			if fam == "ipv6" {
				path = &method.Path{A: localns.UnderlayA6.Addr(), B: localns.UnderlayB6.Addr()}
			}
			before := []string{routeTo(t, c.l.A.Namespace, path.B), routeTo(t, c.l.B.Namespace, path.A)}
			if _, err := setCongestion(c.pair, "cubic"); err != nil {
				t.Fatalf("%s: set: %v", c.name, err)
			}
			if _, err := routeCongestion(c.pair); err != nil {
				t.Fatalf("%s: routes: %v", c.name, err)
			}
			pins, left, err := pinCongestion(c.pair, path)
			if err != nil || len(left) > 0 {
				t.Fatalf("%s %s: pin: %v (left %q)", c.name, fam, err, left)
			}
			for _, r := range []struct {
				ns  string
				dst netip.Addr
			}{{c.l.A.Namespace, path.B}, {c.l.B.Namespace, path.A}} {
				if got := routeTo(t, r.ns, r.dst); !strings.Contains(got, "congctl cubic") {
					t.Errorf("%s %s: route to %s in %s: %q, want congctl cubic", c.name, fam, r.dst, r.ns, got)
				}
			}
			if c.name == "remote" {
				if len(pins) != 2 {
					t.Errorf("%s %s: %d host routes, want one each side", c.name, fam, len(pins))
				}
				for _, ep := range c.pair.Endpoints() {
					if ents, _ := os.ReadDir(filepath.Join(ep.Dir, "undo")); len(ents) != 1 {
						t.Errorf("%s %s: journal of %s holds %d entries, want the route", c.name, fam, ep.Side, len(ents))
					}
				}
			}
			if err := unpinCongestion(pins); err != nil {
				t.Fatalf("%s %s: unpin: %v", c.name, fam, err)
			}
			if c.name == "remote" {
				after := []string{routeTo(t, c.l.A.Namespace, path.B), routeTo(t, c.l.B.Namespace, path.A)}
				for i := range after {
					if after[i] != before[i] {
						t.Errorf("%s %s: route after the cell %q, before %q", c.name, fam, after[i], before[i])
					}
				}
				for _, ep := range c.pair.Endpoints() {
					if _, err := os.Stat(filepath.Join(ep.Dir, "undo")); err == nil {
						t.Errorf("%s %s: journal of %s left behind", c.name, fam, ep.Side)
					}
				}
			}
		}
	}
}

// TestPinCongestionMethodRoute: on a remote host, a host route to the
// peer through one of the method's devices (as charon installs in table
// 220 to kernel-libipsec's TUN device) gets the algorithm in place; one
// through another device is the host's and is left alone, and named.
func TestPinCongestionMethodRoute(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	l, pair, _ := testbedtest.AgentPair(t, 1500)
	ns := l.A.Namespace
	for _, args := range [][]string{
		{"link", "add", "pinm0", "type", "veth", "peer", "name", "pinm0p"},
		{"link", "add", "pinh0", "type", "veth", "peer", "name", "pinh0p"},
		{"link", "set", "pinm0", "up"}, {"link", "set", "pinh0", "up"},
		{"route", "add", "198.19.5.2/32", "dev", "pinm0", "table", "220"},
		{"rule", "add", "to", "198.19.5.2", "lookup", "220", "priority", "220"},
		{"route", "add", "198.19.6.2/32", "dev", "pinh0"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	if _, err := setCongestion(pair, "cubic"); err != nil {
		t.Fatal(err)
	}
	devices := map[string][]string{"a": {"pinm0"}}
	pins, left, err := pinCongestion(pair, &method.Path{A: localns.UnderlayA4.Addr(), B: netip.MustParseAddr("198.19.5.2"), Devices: devices})
	if err != nil || len(left) != 0 {
		t.Fatalf("method's route: %v (left %q)", err, left)
	}
	if got := routeTo(t, ns, netip.MustParseAddr("198.19.5.2")); !strings.Contains(got, "dev pinm0") || !strings.Contains(got, "table 220") || !strings.Contains(got, "congctl cubic") {
		t.Errorf("route to the peer through the method's device: %q, want it in table 220 with congctl cubic", got)
	}
	if err := unpinCongestion(pins); err != nil {
		t.Fatal(err)
	}
	pins, left, err = pinCongestion(pair, &method.Path{A: localns.UnderlayA4.Addr(), B: netip.MustParseAddr("198.19.6.2"), Devices: devices})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || !strings.Contains(left[0], "198.19.6.2/32") {
		t.Errorf("host's own host route: left %q, want it named", left)
	}
	if got := routeTo(t, ns, netip.MustParseAddr("198.19.6.2")); strings.Contains(got, "congctl") {
		t.Errorf("host's own route changed: %q", got)
	}
	if err := unpinCongestion(pins); err != nil {
		t.Fatal(err)
	}
}

// TestPinCongestionKeepsMTU: on a remote host, the host route that pins
// the algorithm keeps the metrics of the route it copies, the path MTU
// above all. The ebpf-* methods route the overlay prefix through the
// underlay with the overlay MTU as the route's mtu metric; a pin without
// it gave their connections an MSS for the underlay's MTU (1448 instead
// of 1398 at 1500), segments 50 bytes too large once encapsulated, which
// the veth drops (docs/performance.md, the ssh gap of ebpf-geneve).
func TestPinCongestionKeepsMTU(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	l, pair, _ := testbedtest.AgentPair(t, 1500)
	ns := l.A.Namespace
	if out, err := exec.Command("ip", "-n", ns, "route", "add", "198.19.7.0/24", "via", localns.UnderlayB4.Addr().String(),
		"dev", l.A.Dev, "mtu", "1450", "advmss", "1398").CombinedOutput(); err != nil {
		t.Fatalf("ip route add: %v: %s", err, out)
	}
	if _, err := setCongestion(pair, "cubic"); err != nil {
		t.Fatal(err)
	}
	peer := netip.MustParseAddr("198.19.7.2")
	pins, left, err := pinCongestion(pair, &method.Path{A: localns.UnderlayA4.Addr(), B: peer})
	if err != nil || len(left) != 0 || len(pins) != 2 {
		t.Fatalf("pin: %v (left %q, %d pins)", err, left, len(pins))
	}
	got := routeTo(t, ns, peer)
	for _, want := range []string{"congctl cubic", "mtu 1450", "advmss 1398"} {
		if !strings.Contains(got, want) {
			t.Errorf("pinned route to %s: %q, want %s", peer, got, want)
		}
	}
	if err := unpinCongestion(pins); err != nil {
		t.Fatal(err)
	}
}
