package runner

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func TestUDPBoundIn(t *testing.T) {
	data := []byte(`   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  123: 00000000:3242 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 0
`)
	if !udpBoundIn(data, 12866) {
		t.Error("port 12866 (0x3242) not found")
	}
	if udpBoundIn(data, 5201) {
		t.Error("port 5201 found")
	}
	if got := string(lastLine([]byte("{\"a\":1}\nrr probe: failed\n"))); got != `{"a":1}` {
		t.Errorf("lastLine = %q", got)
	}
}

// TestRecoverJournal: before the flap the underlay is journaled (the
// entry that sets it up with its addresses and the routes through it,
// and the one of its keep_addr_on_down); when the flap dies with the
// device down (the kernel dropped its IPv6 addresses and every route
// through it, and the flap had set keep_addr_on_down), ensureUp puts all
// of it back as it was and drops the entries.
func TestRecoverJournal(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), MTU: 1500, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a := l.Pair().A
	link, err := a.NL.LinkByName(a.Dev)
	if err != nil {
		t.Fatal(err)
	}
	// The host's own routes through the device: a static one in the
	// main table, one in a table of its own with a metric, an IPv6 one.
	gw4, gw6 := l.Pair().B.Addr(method.IPv4), l.Pair().B.Addr(method.IPv6)
	for _, r := range []netlink.Route{
		{Dst: testbed.PrefixNet(netip.MustParsePrefix("198.19.77.0/24")), Gw: net.IP(gw4.AsSlice()), Protocol: unix.RTPROT_STATIC},
		{Dst: testbed.PrefixNet(netip.MustParsePrefix("198.19.78.0/24")), Gw: net.IP(gw4.AsSlice()), Table: 100, Priority: 7, Protocol: unix.RTPROT_BOOT},
		{Dst: testbed.PrefixNet(netip.MustParsePrefix("2001:2:77::/64")), Gw: net.IP(gw6.AsSlice()), Protocol: unix.RTPROT_STATIC},
	} {
		r.LinkIndex = link.Attrs().Index
		if err := a.NL.RouteAdd(&r); err != nil {
			t.Fatalf("add %s: %v", r.Dst, err)
		}
	}
	keep := rr.KeepAddrPath(a.Dev)
	before := linkState(t, a)
	if err := journalLinkUp(a); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(a.Dir, "undo", recoverUndo(a.Dev))
	data, err := os.ReadFile(entry)
	if err != nil {
		t.Fatalf("no journal entry before the flap: %v", err)
	}
	var u testbed.Undo
	if err := json.Unmarshal(data, &u); err != nil || u.Kind != testbed.UndoAddrs || u.Dev != a.Dev || len(u.Addrs) == 0 || len(u.Routes) != 3 {
		t.Errorf("journal entry %s: %+v, %v; want the addresses of %s and its three routes", entry, u, err, a.Dev)
	}
	if err := a.NL.LinkSetDown(link); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteFile(keep, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if down := linkState(t, a); cmp.Equal(before, down) {
		t.Fatalf("going down changed nothing: %v", down)
	}
	if err := ensureUp(a); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, linkState(t, a)); diff != "" {
		t.Errorf("%s after ensureUp (-before the flap +after):\n%s", a.Dev, diff)
	}
	if left, _ := filepath.Glob(filepath.Join(a.Dir, "undo", "recover-*")); len(left) > 0 {
		t.Errorf("journal entries left after ensureUp: %v", left)
	}
}

// linkState is ep's underlay as text lines: up or down, its global
// addresses, the routes through it (but the kernel's own) and its
// keep_addr_on_down.
func linkState(t *testing.T, ep *testbed.Endpoint) []string {
	t.Helper()
	link, err := ep.NL.LinkByName(ep.Dev)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{fmt.Sprintf("up %v", link.Attrs().Flags&net.FlagUp != 0)}
	addrs, err := ep.NL.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() {
			lines = append(lines, "addr "+a.IPNet.String())
		}
	}
	routes, err := rr.RoutesToPutBack(ep.NL, link)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		lines = append(lines, fmt.Sprintf("route %s via %s table %d metric %d proto %d", r.Dst, r.Gw, r.Table, r.Priority, r.Protocol))
	}
	v, err := ep.ReadFile(rr.KeepAddrPath(ep.Dev))
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, "keep_addr_on_down "+strings.TrimSpace(string(v)))
	sort.Strings(lines)
	return lines
}
