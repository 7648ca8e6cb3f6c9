package rr

import (
	"context"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func TestSummarizeStream(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	sent := []time.Duration{0, ms(10), ms(20), ms(30), ms(40), ms(50)}
	// Answers out of order; requests 2 and 3 lost; up at 35 ms.
	answers := []time.Duration{ms(1), ms(12), -1, -1, ms(58), ms(52)}
	var r StreamReport
	summarizeStream(&r, sent, answers, ms(35))
	if r.Sent != 6 || r.Answered != 4 || r.Lost != 2 {
		t.Errorf("sent %d answered %d lost %d, want 6 4 2", r.Sent, r.Answered, r.Lost)
	}
	if !r.Recovered || r.Recovery != ms(17).Seconds() {
		t.Errorf("recovered %v after %v s, want after 0.017 s", r.Recovered, r.Recovery)
	}
	if r.Outage != ms(40).Seconds() {
		t.Errorf("outage %v s, want 0.04 s (12 ms to 52 ms)", r.Outage)
	}
	r = StreamReport{}
	summarizeStream(&r, sent, []time.Duration{ms(1), -1, -1, -1, -1, -1}, ms(35))
	if r.Recovered || r.Lost != 5 {
		t.Errorf("nothing after up: recovered %v, lost %d", r.Recovered, r.Lost)
	}
}

// startEcho serves on a free loopback port and returns its address.
func startEchoOn(t *testing.T, ap netip.AddrPort) (*EchoServer, netip.AddrPort) {
	t.Helper()
	s, err := ListenEcho(ap)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	return s, s.Addr().(*net.UDPAddr).AddrPort()
}

func TestProbeAnswers(t *testing.T) {
	s, ap := startEchoOn(t, netip.MustParseAddrPort("127.0.0.1:0"))
	defer s.Close()
	r, err := Probe(context.Background(), ProbeConfig{Server: ap, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent < 1 || r.FirstAnswer <= 0 || r.FirstAnswer > 1 || r.RTT <= 0 {
		t.Errorf("probe %+v", r)
	}
	// Nothing answers: the probe gives up after its timeout, counting.
	s.Close()
	r, err = Probe(context.Background(), ProbeConfig{Server: ap, Timeout: 200 * time.Millisecond})
	if err == nil || r.Sent < 5 {
		t.Errorf("probe of a closed port: %+v, %v; want an error after about 20 requests", r, err)
	}
}

// serverFlap takes the echo server away while "down".
type serverFlap struct {
	t  *testing.T
	ap netip.AddrPort
	s  *EchoServer
}

func (f *serverFlap) Down() error { return f.s.Close() }
func (f *serverFlap) Up() ([]string, error) {
	f.s, _ = startEchoOn(f.t, f.ap)
	return []string{"echo server"}, nil
}

func TestStreamRecovers(t *testing.T) {
	s, ap := startEchoOn(t, netip.MustParseAddrPort("127.0.0.1:0"))
	f := &serverFlap{t: t, ap: ap, s: s}
	defer func() { f.s.Close() }()
	r, err := Stream(context.Background(), StreamConfig{Server: ap, Lead: 200 * time.Millisecond, Down: 300 * time.Millisecond,
		Flap: f, Tail: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Flapped || !r.Recovered || r.Down < 0.3 || r.Recovery > 0.2 || r.Lost < 20 || r.Outage < 0.3 || len(r.Restored) != 1 {
		t.Errorf("stream %+v: want about 30 lost over 0.3 s down, recovered within a few requests", r)
	}
	// Without a flap nothing is lost.
	r, err = Stream(context.Background(), StreamConfig{Server: ap, Lead: 100 * time.Millisecond, Down: 100 * time.Millisecond, Tail: 50 * time.Millisecond})
	if err != nil || r.Lost != 0 || r.Sent < 10 || r.Flapped {
		t.Errorf("plain stream %+v, %v", r, err)
	}
}

// TestLinkFlapRestores takes a veth device with IPv4 and IPv6 addresses
// and a static route down and up in a throwaway namespace: the route the
// kernel dropped comes back, and so do the addresses.
func TestLinkFlapRestores(t *testing.T) {
	ns := newTestNS(t)
	for _, args := range [][]string{
		{"link", "add", "tbflap0", "type", "veth", "peer", "name", "tbflap1"},
		{"link", "set", "tbflap1", "up"},
		{"link", "set", "tbflap0", "up"},
		{"addr", "add", "198.18.1.1/24", "dev", "tbflap0"},
		{"addr", "add", "2001:2::1:1/64", "dev", "tbflap0", "nodad"},
		{"route", "add", "198.18.9.0/24", "via", "198.18.1.2", "dev", "tbflap0"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", ns.name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ns.do(t, func() {
		f := &LinkFlap{Dev: "tbflap0"}
		if err := f.Down(); err != nil {
			t.Error(err)
			return
		}
		l, _ := netlink.LinkByName("tbflap0")
		if l.Attrs().Flags&unix.IFF_UP != 0 {
			t.Error("tbflap0 still up after Down")
		}
		restored, err := f.Up()
		if err != nil {
			t.Error(err)
		}
		l, _ = netlink.LinkByName("tbflap0")
		if l.Attrs().Flags&unix.IFF_UP == 0 {
			t.Error("tbflap0 down after Up")
		}
		routes, _ := netlink.RouteList(l, netlink.FAMILY_V4)
		found := false
		for _, r := range routes {
			found = found || (r.Dst != nil && r.Dst.String() == "198.18.9.0/24")
		}
		if !found {
			t.Errorf("route 198.18.9.0/24 not back after the flap (restored %v, routes %v)", restored, routes)
		}
		addrs, _ := netlink.AddrList(l, netlink.FAMILY_ALL)
		var have []string
		for _, a := range addrs {
			have = append(have, a.IPNet.String())
		}
		for _, want := range []string{"198.18.1.1/24", "2001:2::1:1/64"} {
			if !hasAddr(addrs, netlink.Addr{IPNet: mustNet(want)}) {
				t.Errorf("address %s not back after the flap: %v", want, have)
			}
		}
	})
}

// TestLinkFlapGatewayRoutes flaps, as the recover test does, a device
// with an IPv4 and an IPv6 address and routes of a host's own through
// it: through a gateway in main (both families, the IPv6 gateway reached
// only through the prefix route of the device's address, which the
// kernel puts back by itself), through a gateway in table 220 (both
// families), a device route in table 220 and a gateway route in table
// 220 that only that device route reaches (listed before it). Every
// route and address is back afterwards exactly as before, whatever the
// order in which the device listed them.
func TestLinkFlapGatewayRoutes(t *testing.T) {
	ns := newTestNS(t)
	ip := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", append([]string{"-n", ns.name}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	for _, args := range [][]string{
		{"link", "add", "tbflap0", "type", "veth", "peer", "name", "tbflap1"},
		{"link", "set", "tbflap1", "up"},
		{"link", "set", "tbflap0", "up"},
		{"addr", "add", "198.18.1.1/24", "dev", "tbflap0"},
		{"addr", "add", "198.18.1.101/24", "dev", "tbflap0"},
		{"addr", "add", "2001:2::1:1/64", "dev", "tbflap0", "nodad"},
		{"-6", "addr", "add", "2001:2::1:65/64", "dev", "tbflap0", "nodad"},
		{"route", "add", "198.18.240.0/24", "via", "198.18.1.254", "dev", "tbflap0"},
		{"-6", "route", "add", "2001:2:0:f0::/64", "via", "2001:2::1:fe", "dev", "tbflap0"},
		{"route", "add", "198.18.241.0/24", "via", "198.18.1.254", "dev", "tbflap0", "table", "220"},
		{"-6", "route", "add", "2001:2:0:f1::/64", "via", "2001:2::1:fe", "dev", "tbflap0", "table", "220"},
		{"route", "add", "198.18.200.0/24", "dev", "tbflap0", "table", "220"},
		{"route", "add", "198.18.100.0/24", "via", "198.18.200.254", "dev", "tbflap0", "table", "220"},
		{"-6", "route", "add", "2001:2:0:f2::/64", "dev", "tbflap0", "table", "220"},
	} {
		ip(args...)
	}
	state := func() []string {
		t.Helper()
		// The local routes of the IPv6 addresses come back from a work
		// queue, the link-local ones' after duplicate address detection:
		// wait for one for every address (they are the kernel's, not
		// LinkFlap's).
		deadline := time.Now().Add(10 * time.Second)
		for {
			out := ip("-6", "route", "show", "table", "local")
			addrs := ip("-6", "addr", "show")
			if strings.Count(out, "local ") == strings.Count(addrs, "inet6 ") && !strings.Contains(addrs, "tentative") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("IPv6 local routes not back after 10 s:\n%s", out)
			}
			time.Sleep(50 * time.Millisecond)
		}
		var lines []string
		for _, args := range [][]string{
			{"route", "show", "table", "all"}, {"-6", "route", "show", "table", "all"}, {"-o", "addr", "show", "dev", "tbflap0"},
		} {
			for _, l := range strings.Split(strings.TrimSpace(ip(args...)), "\n") {
				lines = append(lines, strings.Join(args, " ")+": "+strings.Join(strings.Fields(strings.Split(l, "\\")[0]), " "))
			}
		}
		// The kernel's routes of one prefix on two devices list in the
		// order it made them.
		slices.Sort(lines)
		return lines
	}
	before := state()
	ns.do(t, func() {
		f := &LinkFlap{Dev: "tbflap0"}
		if err := f.Down(); err != nil {
			t.Error(err)
			return
		}
		if routes := ip("-6", "route", "show", "2001:2:0:f0::/64"); strings.TrimSpace(routes) != "" {
			t.Errorf("2001:2:0:f0::/64 still there with its device down: %s", routes)
		}
		if _, err := f.Up(); err != nil {
			t.Errorf("Up: %v", err)
		}
	})
	if diff := cmp.Diff(before, state()); diff != "" {
		t.Errorf("after the flap (-before +after):\n%s", diff)
	}
}

func mustNet(s string) *net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}
