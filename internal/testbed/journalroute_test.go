package testbed_test

import (
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TestTakeOrder: addresses leave a device in the reverse of RestoreOrder
// (IPv6 first to last, IPv4 last to first), IPv4 secondaries before every
// primary.
func TestTakeOrder(t *testing.T) {
	a := func(s string, flags int) netlink.Addr {
		n, err := netlink.ParseIPNet(s)
		if err != nil {
			t.Fatal(err)
		}
		return netlink.Addr{IPNet: n, Flags: flags}
	}
	sec := unix.IFA_F_SECONDARY
	for _, tt := range []struct {
		name  string
		addrs []netlink.Addr
		want  []int
	}{
		{"none", nil, nil},
		{"primary and secondary", []netlink.Addr{a("198.18.0.1/24", 0), a("198.18.0.101/24", sec)}, []int{1, 0}},
		{"secondary listed first", []netlink.Addr{a("198.18.0.101/24", sec), a("198.18.0.1/24", 0)}, []int{0, 1}},
		{"two subnets", []netlink.Addr{a("198.18.0.1/24", 0), a("198.18.1.1/24", 0), a("198.18.0.101/24", sec), a("198.18.1.101/24", sec)}, []int{3, 2, 1, 0}},
		// IFA_F_TEMPORARY, the same bit, says nothing of IPv6 order.
		{"both families", []netlink.Addr{a("198.18.0.1/24", 0), a("2001:2::65/64", sec), a("198.18.0.101/24", sec), a("2001:2::1/64", 0)}, []int{2, 1, 3, 0}},
	} {
		if diff := cmp.Diff(tt.want, testbed.TakeOrder(tt.addrs)); diff != "" {
			t.Errorf("%s: TakeOrder (-want +got):\n%s", tt.name, diff)
		}
	}
}

// journalNS is a throwaway named namespace with the underlay tbjr0 (a veth
// whose peer tbjr0p is up) carrying what a host's NIC may carry: two IPv4
// subnets, one with a secondary address, two IPv6 addresses in one /64,
// routes through gateways in main and in table 220 (both families), a
// device route in table 220 and a gateway route there that only that
// device route reaches; and tbjrphy0, a device the addresses may move to.
// It returns the namespace's name and a netlink handle in it.
func journalNS(t *testing.T) (string, *netlink.Handle) {
	t.Helper()
	testbedtest.RequireNetAdmin(t)
	name := fmt.Sprintf("tbtest-jr-%s", testbed.NewID())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	for _, args := range [][]string{
		{"link", "add", "tbjr0", "type", "veth", "peer", "name", "tbjr0p"},
		{"link", "add", "tbjrphy0", "type", "veth", "peer", "name", "tbjrphy0p"},
		{"link", "set", "tbjr0p", "up"},
		{"link", "set", "tbjr0", "up"},
		{"link", "set", "tbjrphy0p", "up"},
		{"link", "set", "tbjrphy0", "up"},
		// brd +: an entry of the journal keeps no broadcast address, and
		// the netlink package makes one up for an IPv4 address put back.
		{"addr", "add", "198.18.3.1/24", "brd", "+", "dev", "tbjr0"},
		{"addr", "add", "198.18.4.1/24", "brd", "+", "dev", "tbjr0"},
		{"addr", "add", "198.18.3.101/24", "brd", "+", "dev", "tbjr0"},
		{"-6", "addr", "add", "2001:2::3:1/64", "dev", "tbjr0", "nodad"},
		{"-6", "addr", "add", "2001:2::3:65/64", "dev", "tbjr0", "nodad"},
		{"route", "add", "198.18.240.0/24", "via", "198.18.3.254", "dev", "tbjr0"},
		{"-6", "route", "add", "2001:2:0:f0::/64", "via", "2001:2::3:fe", "dev", "tbjr0"},
		{"route", "add", "198.18.241.0/24", "via", "198.18.3.254", "dev", "tbjr0", "table", "220"},
		{"-6", "route", "add", "2001:2:0:f1::/64", "via", "2001:2::3:fe", "dev", "tbjr0", "table", "220"},
		{"route", "add", "198.18.200.0/24", "dev", "tbjr0", "table", "220"},
		{"route", "add", "198.18.100.0/24", "via", "198.18.200.254", "dev", "tbjr0", "table", "220"},
	} {
		nsIP(t, name, args...)
	}
	h := nsHandle(t, name)
	return name, h
}

func nsHandle(t *testing.T, name string) *netlink.Handle {
	t.Helper()
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// nsIP runs ip in namespace ns and returns its output.
func nsIP(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s %v: %v: %s", ns, args, err, out)
	}
	return string(out)
}

// journalNSState is the routes of every table of both families (sorted:
// the kernel's routes of one prefix on two devices list in the order it
// made them) and the addresses of tbjr0 and tbjrphy0 in their order, as
// ip prints them, once every IPv6 address has its local route and no
// address is tentative.
func journalNSState(t *testing.T, ns string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		local := nsIP(t, ns, "-6", "route", "show", "table", "local")
		addrs := nsIP(t, ns, "-6", "addr", "show")
		if strings.Count(local, "local ") == strings.Count(addrs, "inet6 ") && !strings.Contains(addrs, "tentative") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("IPv6 addresses not settled after 10 s:\n%s\n%s", addrs, local)
		}
		time.Sleep(50 * time.Millisecond)
	}
	lines := func(args ...string) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(nsIP(t, ns, args...)), "\n") {
			if l = strings.Join(strings.Fields(strings.Split(l, "\\")[0]), " "); l != "" {
				out = append(out, strings.Join(args, " ")+": "+l)
			}
		}
		return out
	}
	routes := append(lines("route", "show", "table", "all"), lines("-6", "route", "show", "table", "all")...)
	slices.Sort(routes)
	return append(append(routes, lines("-o", "addr", "show", "dev", "tbjr0")...), lines("-o", "addr", "show", "dev", "tbjrphy0")...)
}

// TestJournalAddrsSecondaryAndGatewayRoutes: a run that moved every global
// address of tbjr0 to tbjrphy0 (as ovs-* on the netdev datapath does:
// secondaries first, TakeOrder, so that none goes with its primary) and
// then died with tbjr0 down (the recover test's flap) has journalled the
// addresses and the routes through tbjr0, the routes in an order that
// puts gateway routes before the routes that reach their gateways.
// CleanSite puts every address back, with its secondary flag and in its
// order, and every route, as before.
func TestJournalAddrsSecondaryAndGatewayRoutes(t *testing.T) {
	ns, h := journalNS(t)
	before := journalNSState(t, ns)
	under, err := h.LinkByName("tbjr0")
	if err != nil {
		t.Fatal(err)
	}
	phy, err := h.LinkByName("tbjrphy0")
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := h.AddrList(under, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	global := slices.DeleteFunc(addrs, func(a netlink.Addr) bool { return a.Scope != unix.RT_SCOPE_UNIVERSE })
	routes, err := rr.RoutesToPutBack(h, under)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(routes)
	u := testbed.AddrsUndo("tbjr0", "tbjrphy0", global)
	u.Routes = testbed.JournalRoutes(routes)
	id := testbed.NewID()
	root := t.TempDir()
	dir := testbed.SiteDir(root, id, "j")
	if err := testbed.WriteUndo(dir, "addrs", u); err != nil {
		t.Fatal(err)
	}
	for _, i := range testbed.TakeOrder(global) {
		if err := h.AddrDel(under, &global[i]); err != nil {
			t.Fatalf("take %s off tbjr0 (TakeOrder %v): %v", global[i].IPNet, testbed.TakeOrder(global), err)
		}
	}
	v6 := make([]bool, len(global))
	for i, a := range global {
		v6[i] = a.IP.To4() == nil
	}
	for _, i := range testbed.RestoreOrder(v6) {
		a := netlink.Addr{IPNet: global[i].IPNet}
		if err := h.AddrAdd(phy, &a); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.LinkSetDown(under); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		// CleanSite works in the namespace of its thread.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		orig, err := netns.Get()
		if err != nil {
			done <- err
			return
		}
		defer orig.Close()
		nsh, err := netns.GetFromName(ns)
		if err != nil {
			done <- err
			return
		}
		defer nsh.Close()
		if err := netns.Set(nsh); err != nil {
			done <- err
			return
		}
		defer func() { _ = netns.Set(orig) }()
		what, err := agent.CleanSite(root, id, "j")
		t.Logf("clean: %v", what)
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatalf("CleanSite: %v", err)
	}
	if diff := cmp.Diff(before, journalNSState(t, ns)); diff != "" {
		t.Errorf("after CleanSite (-before +after):\n%s", diff)
	}
}

// TestPutRoutesBackWaitsForGateway: after tbjr0 went down and up without
// keep_addr_on_down its IPv6 addresses are gone, and the route of the
// host's IPv6 gateway's prefix comes back only with them (here 300 ms
// later, as the kernel may take a moment): PutRoutesBack, given the
// gateway routes first, waits for it and puts every route back.
func TestPutRoutesBackWaitsForGateway(t *testing.T) {
	ns, h := journalNS(t)
	before := journalNSState(t, ns)
	under, err := h.LinkByName("tbjr0")
	if err != nil {
		t.Fatal(err)
	}
	routes, err := rr.RoutesToPutBack(h, under)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(routes)
	if err := h.LinkSetDown(under); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(under); err != nil {
		t.Fatal(err)
	}
	if out := nsIP(t, ns, "-6", "addr", "show", "dev", "tbjr0", "scope", "global"); strings.TrimSpace(out) != "" {
		t.Fatalf("tbjr0 kept its IPv6 addresses (keep_addr_on_down?):\n%s", out)
	}
	back := make(chan error)
	go func() {
		time.Sleep(300 * time.Millisecond)
		var errs []string
		for _, a := range []string{"2001:2::3:1/64", "2001:2::3:65/64"} {
			if out, err := exec.Command("ip", "-n", ns, "-6", "addr", "add", a, "dev", "tbjr0", "nodad").CombinedOutput(); err != nil {
				errs = append(errs, fmt.Sprintf("%v: %s", err, out))
			}
		}
		if len(errs) > 0 {
			back <- fmt.Errorf("put the addresses back: %s", strings.Join(errs, "; "))
			return
		}
		back <- nil
	}()
	start := time.Now()
	added, err := testbed.PutRoutesBack(h, under, testbed.JournalRoutes(routes))
	if err != nil {
		t.Errorf("PutRoutesBack after %v: %v", time.Since(start), err)
	}
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	t.Logf("put back in %v: %v", time.Since(start), added)
	if diff := cmp.Diff(before, journalNSState(t, ns)); diff != "" {
		t.Errorf("after PutRoutesBack (-before +after):\n%s", diff)
	}
}
