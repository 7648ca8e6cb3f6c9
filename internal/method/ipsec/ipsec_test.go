package ipsec_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ipsec"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
	"github.com/tunbench/tunbench/internal/wire"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ipsecRequireSwan skips t when charon or swanctl is missing.
func ipsecRequireSwan(t testing.TB) {
	t.Helper()
	if err := method.Check(method.KernelFunc(func(string, string) (bool, error) { return true, nil }), ipsec.NewIPsec().Requirements()); err != nil {
		testenv.SkipMissing(t, "strongSwan missing: %v", err)
	}
}

// ipsecRequireESP skips t unless the kernel has ESP (the kernel lab, or a
// host kernel built with it).
func ipsecRequireESP(t *testing.T) {
	t.Helper()
	if methodtest.InLab() {
		return
	}
	if cfg, err := hostinfo.LoadKernelConfig(); err == nil && hostinfo.HasKernelFeature(cfg, "CONFIG_INET_ESP") && hostinfo.HasKernelFeature(cfg, "CONFIG_INET6_ESP") {
		return
	}
	t.Skip("kernel lacks CONFIG_INET_ESP/CONFIG_INET6_ESP (kernel xfrm ESP); runs in the kernel lab")
}

// ipsecWithoutESP gives t a kernel without ESP: this host's own when it
// lacks ESP (the kernel refuses the data path's probe SA; nil faults),
// else this one with ESP faked away by the returned faults (put them in
// Env.Faults), so the tests of the kernel-libipsec fallback and of its
// refusals run on any kernel.
func ipsecWithoutESP(t testing.TB) *method.Faults {
	t.Helper()
	cfg, err := hostinfo.LoadKernelConfig()
	if err == nil && !hostinfo.HasKernelFeature(cfg, "CONFIG_INET_ESP") && !hostinfo.HasKernelFeature(cfg, "CONFIG_INET6_ESP") {
		return nil
	}
	return &method.Faults{KernelLacks: []string{"CONFIG_INET_ESP", "CONFIG_INET6_ESP"}}
}

// ipsecCapture captures on ep's underlay device while fn runs and returns
// the decoded frames.
func ipsecCapture(t *testing.T, ep *testbed.Endpoint, fn func()) []wire.Frame {
	t.Helper()
	c, err := wire.Start(ep, ep.Dev)
	if err != nil {
		t.Fatal(err)
	}
	fn()
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Logf("decode (frames kept): %v", err)
	}
	return frames
}

// ipsecPingSize checks that a packet of exactly mtu bytes (don't fragment)
// crosses the overlay from a (ep, wherever it is) to path.B.
func ipsecPingSize(t *testing.T, a *testbed.Endpoint, path *method.Path, mtu int) {
	t.Helper()
	hdr := 28
	if path.B.Is6() {
		hdr = 48
	}
	out, err := a.Run(context.Background(), "ping", "-c", "2", "-i", "0.2", "-W", "3", "-M", "do", "-s", strconv.Itoa(mtu-hdr), path.B.String())
	if err != nil {
		t.Fatalf("ping with %d-byte packets (the overlay MTU): %v\n%s", mtu, err, out)
	}
}

// ipsecCheckESP checks the ESP on the wire: encap is wire.EncapESP or
// wire.EncapESPUDP (UDP 4500, non-zero SPI, not the non-ESP marker), both
// directions, no other ESP form, no outer fragments, nothing longer than
// the underlay MTU, and only the SPIs charon negotiated.
func ipsecCheckESP(t *testing.T, l *localns.Local, frames []wire.Frame, encap string, mtu int, spis map[uint32]bool) {
	t.Helper()
	dirs := map[string]int{}
	var n int
	for _, f := range frames {
		if f.Fragment {
			t.Errorf("outer fragment on the wire: %s", f)
		}
		if f.IPLen > mtu {
			t.Errorf("outer packet of %d bytes exceeds the underlay MTU %d: %s", f.IPLen, mtu, f)
		}
		switch f.Encap {
		case wire.EncapESP, wire.EncapESPUDP:
		default:
			continue
		}
		if f.Encap != encap {
			t.Errorf("%s frame on the wire, want only %s: %s", f.Encap, encap, f)
			continue
		}
		n++
		if f.ESP == nil || f.ESP.SPI == 0 {
			t.Errorf("ESP frame without SPI: %s", f)
			continue
		}
		if encap == wire.EncapESPUDP && (f.SrcPort != wire.PortNATT || f.DstPort != wire.PortNATT) {
			t.Errorf("ESP in UDP %d->%d, want 4500->4500: %s", f.SrcPort, f.DstPort, f)
		}
		if spis != nil && !spis[f.ESP.SPI] {
			t.Errorf("SPI %08x on the wire is not one charon negotiated (%v)", f.ESP.SPI, spis)
		}
		if f.Src == l.A.Addr4.Addr() || f.Src == l.A.Addr6.Addr() {
			dirs["a->b"]++
		} else {
			dirs["b->a"]++
		}
	}
	if n == 0 {
		t.Fatalf("no %s frames among %d captured", encap, len(frames))
	}
	if dirs["a->b"] == 0 || dirs["b->a"] == 0 {
		t.Errorf("%s frames by direction %v, want both", encap, dirs)
	}
}

// ipsecSPIs returns the SPIs of side a's CHILD_SAs in sideDir (both
// directions) as numbers.
func ipsecSPIs(t *testing.T, l *localns.Local, dirs ...string) map[uint32]bool {
	t.Helper()
	spis := map[uint32]bool{}
	for _, dir := range dirs {
		children, err := ipsec.IPsecSAs(context.Background(), l.A, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range children {
			for _, s := range []string{c.SPIIn, c.SPIOut} {
				v, err := strconv.ParseUint(s, 16, 32)
				if err != nil {
					t.Fatalf("SPI %q: %v", s, err)
				}
				spis[uint32(v)] = true
			}
		}
	}
	return spis
}

// TestIPsecLibipsec runs the default options on a kernel without ESP
// (ipsecWithoutESP): auto picks kernel-libipsec, ESP in UDP 4500, the TUN
// MTU capped at 1400.
func TestIPsecLibipsec(t *testing.T) {
	ipsecRequireSwan(t)
	faults := ipsecWithoutESP(t)
	for _, family := range []string{method.IPv4, method.IPv6} {
		t.Run(family, func(t *testing.T) {
			m := ipsec.NewIPsec()
			l, env, path := methodtest.SetupFaults(t, m, family, 1500, nil, faults)
			if !strings.HasPrefix(path.Variant, "kernel-libipsec") || path.Datapath != method.DatapathLibipsec {
				t.Fatalf("variant %q, datapath %q on a kernel without ESP, want kernel-libipsec, libipsec", path.Variant, path.Datapath)
			}
			if len(path.Daemons) != 2 {
				t.Errorf("daemons %v, want a charon per side", path.Daemons)
			}
			mtu := min(env.OverlayMTU, ipsec.LibipsecMaxMTU)
			methodtest.DeviceMTU(t, l, path, mtu)
			spis := ipsecSPIs(t, l, filepath.Join(env.Dir, "ipsec-a"))
			var out []byte
			frames := ipsecCapture(t, l.A, func() {
				methodtest.Ping(t, l, path)
				ipsecPingSize(t, l.A, path, mtu)
				out = methodtest.Iperf3(t, l, path, 2)
			})
			ipsecCheckESP(t, l, frames, wire.EncapESPUDP, env.UnderlayMTU, spis)
			t.Logf("%s %s: %.2f Gbit/s (one TCP stream, 2 s)", path.Variant, family, methodtest.Gbps(t, out))
			ipsecRekeyCheck(t, m, l, env, path, spis)
		})
	}
}

// ipsecRekeyCheck forces a rekey (method.Rekeyer): new SPIs replace the
// old ones, and traffic flows over them.
func ipsecRekeyCheck(t *testing.T, m method.Method, l *localns.Local, env *method.Env, path *method.Path, before map[uint32]bool) {
	t.Helper()
	rk, ok := m.(method.Rekeyer)
	if !ok {
		t.Fatal("ipsec is not a method.Rekeyer")
	}
	how, err := rk.Rekey(context.Background(), env)
	if err != nil {
		t.Fatalf("rekey: %v", err)
	}
	if how != "swanctl --rekey --child tunbench" {
		t.Errorf("rekey says %q", how)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := ipsecSPIs(t, l, filepath.Join(env.Dir, "ipsec-a"))
		fresh := false
		for spi := range now {
			fresh = fresh || !before[spi]
		}
		if fresh {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new SPI 10 s after the rekey: %v, before %v", now, before)
		}
		time.Sleep(100 * time.Millisecond)
	}
	methodtest.Ping(t, l, path)
}

// TestIPsecCiphers carries traffic with each cipher and checks that charon
// negotiated it.
func TestIPsecCiphers(t *testing.T) {
	ipsecRequireSwan(t)
	for cipher, alg := range map[string]string{"aes256gcm": "AES_GCM_16", "chacha20poly1305": "CHACHA20_POLY1305"} {
		t.Run(cipher, func(t *testing.T) {
			l, env, path := methodtest.Setup(t, ipsec.NewIPsec(), method.IPv4, 1500, map[string]string{"cipher": cipher, "datapath": "libipsec"})
			methodtest.Ping(t, l, path)
			out := methodtest.Iperf3(t, l, path, 1)
			children, err := ipsec.IPsecSAs(context.Background(), l.A, filepath.Join(env.Dir, "ipsec-a"))
			if err != nil {
				t.Fatal(err)
			}
			if len(children) != 1 || children[0].EncrAlg != alg || children[0].BytesOut == 0 {
				t.Errorf("CHILD_SAs %+v, want one %s SA that carried traffic", children, alg)
			}
			t.Logf("%s: %.2f Gbit/s", cipher, methodtest.Gbps(t, out))
		})
	}
}

// TestIPsecTransportNeedsXfrm: kernel-libipsec has no transport mode, so
// on a kernel without ESP (ipsecWithoutESP) transport mode is not
// supported, nor is a forced xfrm data path, and the error says why.
func TestIPsecTransportNeedsXfrm(t *testing.T) {
	t.Parallel()
	ipsecRequireSwan(t)
	faults := ipsecWithoutESP(t)
	for _, opts := range []map[string]string{
		{"mode": "transport", "datapath": "libipsec"},
		{"mode": "transport"},
		{"datapath": "xfrm"},
	} {
		l := testbedtest.New(t, 1500)
		m := ipsec.NewIPsec()
		env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1435,
			Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: opts, Faults: faults}
		_, err := m.Setup(context.Background(), env)
		if !errors.Is(err, method.ErrNotSupported) {
			t.Errorf("Setup(%v) = %v, want ErrNotSupported", opts, err)
		} else if opts["mode"] == "transport" && !strings.Contains(err.Error(), "tunnel mode only") {
			t.Errorf("Setup(%v) error %q does not say kernel-libipsec supports tunnel mode only", opts, err)
		}
		if err := m.Teardown(context.Background(), env); err != nil {
			t.Errorf("Teardown after refused Setup: %v", err)
		}
	}
}

// TestIPsecSecrets: the PSK is only in the 0600 swanctl.conf files; not in
// charon's logs, other files of the run, the Path, or errors.
func TestIPsecSecrets(t *testing.T) {
	ipsecRequireSwan(t)
	l, env, path := methodtest.Setup(t, ipsec.NewIPsec(), method.IPv4, 1500, nil)
	methodtest.Ping(t, l, path)
	conf := filepath.Join(env.Dir, "ipsec-a", "swanctl.conf")
	data, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`secret = 0s([A-Za-z0-9+/=]+)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("no secret in %s", conf)
	}
	raw, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil || len(raw) != 32 {
		t.Fatalf("PSK is not 32 bytes of base64: %v", err)
	}
	forms := [][]byte{m[1], raw, []byte(hex.EncodeToString(raw)), []byte(strings.ToUpper(hex.EncodeToString(raw)))}
	holds := func(b []byte) bool {
		for _, f := range forms {
			if bytes.Contains(b, f) {
				return true
			}
		}
		return false
	}
	err = filepath.WalkDir(env.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Type()&fs.ModeSocket != 0 {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.Name() == "swanctl.conf" {
			if info.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v, want 0600", p, info.Mode().Perm())
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if holds(b) {
			t.Errorf("%s holds the PSK", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if holds([]byte(fmt.Sprintf("%+v %s", *path, path.Variant))) {
		t.Error("Path holds the PSK")
	}
}

// TestIPsecHandshakeFailure: when IKE fails (here: b has another PSK), the
// error names the side and quotes charon's log, and carries neither key.
func TestIPsecHandshakeFailure(t *testing.T) {
	t.Parallel()
	ipsecRequireSwan(t)
	var psks []string
	m := ipsec.NewIPsecWithConfigHook(func(side string, psk *string) {
		if side == "b" {
			other := "0s" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
			*psk = other
		}
		psks = append(psks, *psk)
	})
	l := testbedtest.New(t, 1500)
	env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1435,
		Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
	_, err := m.Setup(context.Background(), env)
	if err == nil {
		t.Fatal("Setup with mismatched PSKs succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"a: charon: initiate CHILD_SA tunbench", "last lines of charon.log (a)", "last lines of charon.log (b)", "AUTHENTICATION_FAILED"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}
	for _, p := range psks {
		if strings.Contains(msg, strings.TrimPrefix(p, "0s")) {
			t.Errorf("error holds a PSK:\n%s", msg)
		}
	}
	if err := m.Teardown(context.Background(), env); err != nil {
		t.Errorf("Teardown: %v", err)
	}
	for _, ep := range l.Endpoints() {
		ipsecCheckClean(t, ep)
	}
}

// ipsecHostFiles snapshots host paths strongSwan uses by default: nothing here
// may change during a run.
func ipsecHostFiles(t *testing.T) map[string]string {
	t.Helper()
	snap := map[string]string{}
	for _, p := range []string{"/run/charon.pid", "/run/charon.vici", "/run/charon.ctl", "/run/starter.charon.pid",
		"/etc/swanctl", "/etc/swanctl/conf.d", "/etc/swanctl/swanctl.conf", "/etc/ipsec.secrets", "/etc/ipsec.conf", "/etc/strongswan.conf"} {
		info, err := os.Stat(p)
		if err != nil {
			snap[p] = "absent"
			continue
		}
		snap[p] = fmt.Sprintf("%v %d %s", info.Mode(), info.Size(), info.ModTime().Format(time.RFC3339Nano))
	}
	return snap
}

// TestIPsecTeardown: after Teardown no charon runs, the run directories
// are gone, the namespaces hold no TUN device, xfrm state, table 220 rule
// or overlay address, and the host's /run and /etc are as before.
func TestIPsecTeardown(t *testing.T) {
	ipsecRequireSwan(t)
	before := ipsecHostFiles(t)
	m := ipsec.NewIPsec()
	l, env, path := methodtest.Setup(t, m, method.IPv4, 1500, nil)
	methodtest.Ping(t, l, path)
	if err := m.Teardown(context.Background(), env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	for _, d := range path.Daemons {
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", d.PID)); err == nil && strings.TrimSpace(string(comm)) == "charon" {
			t.Errorf("charon %d of side %s still runs", d.PID, d.Side)
		}
	}
	for _, side := range []string{"a", "b"} {
		if _, err := os.Stat(filepath.Join(env.Dir, "ipsec-"+side)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("run directory of side %s left: %v", side, err)
		}
	}
	for _, ep := range l.Endpoints() {
		ipsecCheckClean(t, ep)
	}
	if diff := cmp.Diff(before, ipsecHostFiles(t)); diff != "" {
		t.Errorf("host strongSwan files changed (-before +after):\n%s", diff)
	}
}

// TestIPsecTeardownKeepsOthers: on a host's own namespace (the ssh
// testbed) another IPsec may live beside the run's, so Teardown removes
// only what is tunbench's: an xfrm policy between other addresses, a
// route in table 220 to another network, and the rule to table 220 that
// route needs stay; the run's own routes, policies and lo addresses go
// (charon takes its own rule, to the run's own table, with it when it
// stops).
// (This kernel refuses xfrm states without ESP; the lab's teardown test
// covers states.)
func TestIPsecTeardownKeepsOthers(t *testing.T) {
	ipsecRequireSwan(t)
	m := ipsec.NewIPsec()
	l, env, path := methodtest.Setup(t, m, method.IPv4, 1500, nil)
	methodtest.Ping(t, l, path)
	ep := l.A
	// Another IPsec's state on the same host, in documentation ranges
	// (configuration only: nothing is sent).
	_, other, _ := net.ParseCIDR("192.0.2.0/25")
	_, otherDst, _ := net.ParseCIDR("192.0.2.128/25")
	lo, err := ep.NL.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	foreignRoute := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: otherDst, Table: 220}
	// The other IPsec's rule to its table 220.
	foreignRule := netlink.NewRule()
	foreignRule.Table, foreignRule.Priority, foreignRule.Family = 220, 1220, netlink.FAMILY_V4
	foreignPolicy := &netlink.XfrmPolicy{Src: other, Dst: otherDst, Dir: netlink.XFRM_DIR_OUT,
		Tmpls: []netlink.XfrmPolicyTmpl{{Src: net.ParseIP("192.0.2.1"), Dst: net.ParseIP("192.0.2.129"), Proto: netlink.XFRM_PROTO_ESP, Mode: netlink.XFRM_MODE_TUNNEL, Reqid: 4242}}}
	ourPolicy := &netlink.XfrmPolicy{Src: netipNet(method.OverlayA4.Addr()), Dst: netipNet(method.OverlayB4.Addr()), Dir: netlink.XFRM_DIR_OUT,
		Tmpls: []netlink.XfrmPolicyTmpl{{Src: net.ParseIP("198.18.0.1"), Dst: net.ParseIP("198.18.0.2"), Proto: netlink.XFRM_PROTO_ESP, Mode: netlink.XFRM_MODE_TUNNEL, Reqid: 4243}}}
	for _, add := range []func() error{
		func() error { return ep.NL.RouteAdd(foreignRoute) },
		func() error { return ep.NL.RuleAdd(foreignRule) },
		func() error { return ep.NL.XfrmPolicyAdd(foreignPolicy) },
		func() error { return ep.NL.XfrmPolicyAdd(ourPolicy) },
	} {
		if err := add(); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Teardown(context.Background(), env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	var got []string
	routes, err := ep.NL.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: 220}, netlink.RT_FILTER_TABLE)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		got = append(got, "route "+r.Dst.String()+" table 220")
	}
	rules, err := ep.NL.RuleList(netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Table == 220 {
			got = append(got, fmt.Sprintf("rule priority %d to table 220", r.Priority))
		}
	}
	policies, err := ep.NL.XfrmPolicyList(netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range policies {
		got = append(got, fmt.Sprintf("policy %s -> %s", p.Src, p.Dst))
	}
	want := []string{"route 192.0.2.128/25 table 220", "rule priority 1220 to table 220", "policy 192.0.2.0/25 -> 192.0.2.128/25"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("side a after Teardown (-want +got):\n%s", diff)
	}
	// Now the host's own go too, and the namespace is clean.
	if err := ep.NL.XfrmPolicyDel(foreignPolicy); err != nil {
		t.Fatal(err)
	}
	if err := ep.NL.RouteDel(foreignRoute); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Table == 220 {
			if err := ep.NL.RuleDel(&r); err != nil {
				t.Fatal(err)
			}
		}
	}
	ipsecCheckClean(t, ep)
}

// netipNet is addr as a host network.
func netipNet(a netip.Addr) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())}
}

// ipsecCheckClean checks that ep holds nothing of an IPsec method.
func ipsecCheckClean(t *testing.T, ep *testbed.Endpoint) {
	t.Helper()
	links, err := ep.NL.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range links {
		if strings.HasPrefix(link.Attrs().Name, "ipsec") {
			t.Errorf("%s: link %s left", ep.Side, link.Attrs().Name)
		}
	}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rules, err := ep.NL.RuleList(fam)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			if r.Table != unix.RT_TABLE_LOCAL && r.Table != unix.RT_TABLE_MAIN && r.Table != unix.RT_TABLE_DEFAULT {
				t.Errorf("%s: rule %d to table %d left", ep.Side, r.Priority, r.Table)
			}
		}
		lo, err := ep.NL.LinkByName("lo")
		if err != nil {
			t.Fatal(err)
		}
		addrs, err := ep.NL.AddrList(lo, fam)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if !a.IP.IsLoopback() {
				t.Errorf("%s: address %s left on lo", ep.Side, a.IPNet)
			}
		}
	}
	states, err := ep.NL.XfrmStateList(0)
	if err != nil {
		t.Fatal(err)
	}
	policies, err := ep.NL.XfrmPolicyList(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(states)+len(policies) != 0 {
		t.Errorf("%s: %d xfrm states and %d policies left", ep.Side, len(states), len(policies))
	}
}

// TestLabIPsecXfrm runs the kernel xfrm data path: ESP (protocol 50) on the
// wire without NAT-T, UDP 4500 with it; tunnel and transport mode.
func TestLabIPsecXfrm(t *testing.T) {
	ipsecRequireSwan(t)
	ipsecRequireESP(t)
	for _, tt := range []struct {
		name   string
		family string
		opts   map[string]string
		encap  string
	}{
		{"ipv4", method.IPv4, nil, wire.EncapESP},
		{"ipv6", method.IPv6, nil, wire.EncapESP},
		{"ipv4-natt", method.IPv4, map[string]string{"natt": "on"}, wire.EncapESPUDP},
		{"ipv6-natt", method.IPv6, map[string]string{"natt": "on"}, wire.EncapESPUDP},
		{"ipv4-chacha20poly1305", method.IPv4, map[string]string{"cipher": "chacha20poly1305"}, wire.EncapESP},
		{"ipv4-transport", method.IPv4, map[string]string{"mode": "transport"}, wire.EncapESP},
		{"ipv6-transport-natt", method.IPv6, map[string]string{"mode": "transport", "natt": "on"}, wire.EncapESPUDP},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, env, path := methodtest.Setup(t, ipsec.NewIPsec(), tt.family, 1500, tt.opts)
			if !strings.HasPrefix(path.Variant, "kernel xfrm") || path.Datapath != method.DatapathKernel {
				t.Fatalf("variant %q, datapath %q, want kernel xfrm, kernel", path.Variant, path.Datapath)
			}
			if tt.opts["mode"] == "transport" && path.B != l.B.Addr(tt.family) {
				t.Errorf("transport mode runs to %s, want the underlay address %s", path.B, l.B.Addr(tt.family))
			}
			spis := ipsecSPIs(t, l, filepath.Join(env.Dir, "ipsec-a"))
			var out []byte
			frames := ipsecCapture(t, l.A, func() {
				methodtest.Ping(t, l, path)
				ipsecPingSize(t, l.A, path, env.OverlayMTU)
				out = methodtest.Iperf3(t, l, path, 1)
			})
			ipsecCheckESP(t, l, frames, tt.encap, env.UnderlayMTU, spis)
			t.Logf("%s %s: %.1f Mbit/s (emulated guest: function only)", path.Variant, tt.name, methodtest.Gbps(t, out)*1e3)
		})
	}
}

// TestIPsecRequirementsHere: both methods' requirements hold on a machine
// with strongSwan installed, whether or not its kernel has ESP (the
// fallback is kernel-libipsec).
func TestIPsecRequirementsHere(t *testing.T) {
	ipsecRequireSwan(t)
	cfg, err := hostinfo.LoadKernelConfig()
	if err != nil {
		t.Skipf("no kernel config to check against: %v", err)
	}
	probe := method.KernelFunc(func(o, _ string) (bool, error) { return hostinfo.HasKernelFeature(cfg, o), nil })
	for _, m := range []method.Method{ipsec.NewIPsec(), ipsec.NewIPsecECMP()} {
		if err := method.Check(probe, m.Requirements()); err != nil {
			t.Errorf("%s: %v", m.Name(), err)
		}
	}
}
