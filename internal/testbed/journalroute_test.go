package testbed_test

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

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
