package method_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/wire"
)

// The kernel tunnel methods: geneve, gre, gretap, ipip, ip6ip6, ip6gre.
func kernelTunnels() []method.Method {
	return []method.Method{method.Geneve{}, method.GRE{}, method.Gretap{}, method.IPIP{}, method.IP6IP6{}, method.IP6GRE{}}
}

// tunnelModules maps the kernel options of the tunnel methods to the
// modules that provide them in a modular (e.g. Debian) kernel.
var tunnelModules = map[string]string{
	"CONFIG_GENEVE":      "geneve",
	"CONFIG_NET_IPGRE":   "ip_gre",
	"CONFIG_NET_IPIP":    "ipip",
	"CONFIG_IPV6_TUNNEL": "ip6_tunnel",
	"CONFIG_IPV6_GRE":    "ip6_gre",
	// What the eBPF methods (ebpf-*) need, beside CONFIG_BPF_SYSCALL,
	// which is never a module.
	"CONFIG_NET_CLS_BPF":     "cls_bpf",
	"CONFIG_NET_SCH_INGRESS": "sch_ingress",
}

// requireTunnelKernel skips t, with the reason, when the running kernel lacks an
// option m requires. Options built as modules are loaded now, before the
// test's namespaces exist: loading ip_gre, ipip, ip6_tunnel or ip6_gre
// creates fallback devices (gre0, tunl0, ip6tnl0...) in every existing
// namespace, which would otherwise look like links the method left behind.
// In the kernel lab a missing module fails the test instead.
func requireTunnelKernel(t *testing.T, m method.Method) {
	t.Helper()
	testbedtest.RequireNetAdmin(t)
	cfg, cfgErr := hostinfo.LoadKernelConfig()
	for _, r := range m.Requirements() {
		if r.Kernel == "" {
			continue
		}
		if cfgErr == nil {
			switch cfg[r.Kernel] {
			case "y":
				continue
			case "m":
			default:
				if methodtest.InLab() {
					t.Fatalf("the lab kernel lacks %s", r.Kernel)
				}
				t.Skipf("kernel lacks %s; runs in the kernel lab", r.Kernel)
			}
		}
		mod, ok := tunnelModules[r.Kernel]
		if !ok {
			continue // built in whenever present (CONFIG_BPF_SYSCALL)
		}
		if out, err := exec.Command("modprobe", mod).CombinedOutput(); err != nil {
			if methodtest.InLab() {
				t.Fatalf("modprobe %s (%s): %v: %s", mod, r.Kernel, err, out)
			}
			t.Skipf("kernel lacks %s (modprobe %s: %v); runs in the kernel lab", r.Kernel, mod, err)
		}
	}
}

// tunnelWire is what every a-to-b tunnel frame on the underlay must look like.
type tunnelWire struct {
	// underlay is the outer family and proto the outer protocol.
	underlay string
	proto    uint8
	// check returns what is wrong with one frame, or "".
	check func(f wire.Frame) string
}

// labTunnel runs m for real: set up, ping, one full-size ping with DF,
// one second of iperf3, tear down. It captures a's underlay while the
// pings and the iperf3 run and checks every tunnel frame against want.
// The full-size ping proves the overhead arithmetic: its outer packet must
// be exactly the underlay MTU, unfragmented.
func labTunnel(t *testing.T, m method.Method, family string, opts map[string]string, want tunnelWire) {
	t.Helper()
	requireTunnelKernel(t, m)
	l, env, path := methodtest.Setup(t, m, family, 1500, opts)
	methodtest.DeviceMTU(t, l, path, env.OverlayMTU)

	c, err := wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	methodtest.Ping(t, l, path)
	methodtest.PingFullSize(t, l, env, path)
	pkts, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	saveTunnelPcap(t, m, family, pkts)
	frames, err := wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	tunnel := checkTunnelFrames(t, l, frames, want)
	var echo []wire.Frame
	for _, f := range tunnel {
		if f.Inner != nil && f.Inner.Src == path.A && f.Inner.Dst == path.B && isEchoInner(f.Inner) {
			echo = append(echo, f)
		}
	}
	if len(echo) < 3 {
		t.Fatalf("%d echo requests %s > %s in %s frames, want 3; frames:\n%s", len(echo), path.A, path.B, m.Name(), frameLines(frames))
	}
	if largest := maxTunnelIPLen(echo); largest != env.UnderlayMTU {
		t.Errorf("largest echo request is %d bytes on the underlay, want exactly the underlay MTU %d (overhead %d)",
			largest, env.UnderlayMTU, m.Overhead(family))
	}

	c, err = wire.Start(l.A, l.A.Dev)
	if err != nil {
		t.Fatal(err)
	}
	out := methodtest.Iperf3(t, l, path, 1)
	pkts, err = c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	frames, err = wire.Summarize(pkts)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(checkTunnelFrames(t, l, frames, want)); n == 0 {
		t.Errorf("no %s frames captured under iperf3; frames:\n%s", m.Name(), frameLines(frames[:min(len(frames), 20)]))
	}
	t.Logf("%s: %s (%d frames captured)", t.Name(), fmt.Sprintf("%.2f Gbit/s", methodtest.Gbps(t, out)), len(frames))
}

// checkTunnelFrames checks every a-to-b frame of want.proto between the underlay
// addresses and returns them. Their inner family is not checked: besides
// the measured traffic, tunnel devices carry the kernel's own IPv6
// link-local traffic (MLD, router and neighbour solicitations).
func checkTunnelFrames(t *testing.T, l *testbed.Local, frames []wire.Frame, want tunnelWire) []wire.Frame {
	t.Helper()
	ua, ub := l.A.Addr(want.underlay), l.B.Addr(want.underlay)
	var tunnel []wire.Frame
	for _, f := range frames {
		if f.Fragment {
			t.Errorf("fragmented underlay frame %s", f)
		}
		if f.Family != want.underlay || f.Src != ua || f.Dst != ub || f.Proto != want.proto {
			continue
		}
		tunnel = append(tunnel, f)
		if problem := want.check(f); problem != "" {
			t.Errorf("frame %s: %s", f, problem)
		}
	}
	return tunnel
}

func isEchoInner(in *wire.Inner) bool {
	return in.Proto == wire.ProtoICMP || in.Proto == wire.ProtoICMPv6
}

func maxTunnelIPLen(frames []wire.Frame) int {
	n := 0
	for _, f := range frames {
		n = max(n, f.IPLen)
	}
	return n
}

func frameLines(frames []wire.Frame) string {
	var b strings.Builder
	for _, f := range frames {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

// saveTunnelPcap writes the capture to $TUNBENCH_WIRE_SAVE/<method>-<subtest>.pcap
// when that is set (kernel-lab runs use it to produce the real frames in
// internal/wire/testdata).
func saveTunnelPcap(t *testing.T, m method.Method, family string, pkts []gopacket.Packet) {
	t.Helper()
	dir := os.Getenv("TUNBENCH_WIRE_SAVE")
	if dir == "" {
		return
	}
	name := family
	if _, sub, ok := strings.Cut(t.Name(), "/"); ok {
		name = sub
	}
	if err := wire.WriteFile(filepath.Join(dir, m.Name()+"-"+name+".pcap"), pkts); err != nil {
		t.Error(err)
	}
}

// TestKernelTunnelOverhead checks the arithmetic of each overhead and the
// overlay MTU it gives.
func TestKernelTunnelOverhead(t *testing.T) {
	tests := []struct {
		m        method.Method
		family   string
		underlay int
		overlay  int
	}{
		{method.Geneve{}, method.IPv4, 1500, 1450},
		{method.Geneve{}, method.IPv6, 1500, 1430},
		{method.Geneve{}, method.IPv4, 9000, 8950},
		{method.GRE{}, method.IPv4, 1500, 1476},
		{method.GRE{}, method.IPv6, 1500, 1476},
		{method.Gretap{}, method.IPv4, 1500, 1458},
		{method.Gretap{}, method.IPv6, 1500, 1438},
		{method.IPIP{}, method.IPv4, 1500, 1480},
		{method.IP6IP6{}, method.IPv6, 1500, 1460},
		{method.IP6IP6{}, method.IPv6, 1280, 1240},
		{method.IP6GRE{}, method.IPv4, 1500, 1456},
		{method.IP6GRE{}, method.IPv6, 1500, 1456},
		{method.IP6GRE{}, method.IPv6, 512, 468},
	}
	for _, tt := range tests {
		if got := tt.underlay - tt.m.Overhead(tt.family); got != tt.overlay {
			t.Errorf("%s/%s: overlay MTU over %d = %d, want %d", tt.m.Name(), tt.family, tt.underlay, got, tt.overlay)
		}
	}
}

func TestKernelTunnelDescriptions(t *testing.T) {
	wantFamilies := map[string]string{
		"geneve": "ipv4 ipv6", "gre": "ipv4 ipv6", "gretap": "ipv4 ipv6",
		"ipip": "ipv4", "ip6ip6": "ipv6", "ip6gre": "ipv4 ipv6",
	}
	wantKernel := map[string]string{
		"geneve": "CONFIG_GENEVE", "gre": "CONFIG_NET_IPGRE", "gretap": "CONFIG_NET_IPGRE CONFIG_IPV6_GRE",
		"ipip": "CONFIG_NET_IPIP", "ip6ip6": "CONFIG_IPV6_TUNNEL", "ip6gre": "CONFIG_IPV6_GRE",
	}
	r := method.NewRegistry(kernelTunnels()...) // names are unique
	for _, m := range r.All() {
		if got := strings.Join(m.Families(), " "); got != wantFamilies[m.Name()] {
			t.Errorf("%s families %q, want %q", m.Name(), got, wantFamilies[m.Name()])
		}
		var opts []string
		for _, req := range m.Requirements() {
			opts = append(opts, req.Kernel)
			if _, ok := tunnelModules[req.Kernel]; !ok {
				t.Errorf("%s requires %s, which has no module in tunnelModules", m.Name(), req.Kernel)
			}
		}
		if got := strings.Join(opts, " "); got != wantKernel[m.Name()] {
			t.Errorf("%s requires %q, want %q", m.Name(), got, wantKernel[m.Name()])
		}
		if m.Implementation() == "" {
			t.Errorf("%s has no implementation description", m.Name())
		}
	}
}

// TestKernelTunnelOptions checks option validation, which happens before
// anything is created (so a nil testbed is fine).
func TestKernelTunnelOptions(t *testing.T) {
	tests := []struct {
		m       method.Method
		family  string
		opts    map[string]string
		wantErr string
	}{
		{method.Geneve{}, method.IPv4, map[string]string{"vni": "0"}, `option vni="0"`},
		{method.Geneve{}, method.IPv4, map[string]string{"vni": "16777216"}, `option vni="16777216"`},
		{method.Geneve{}, method.IPv4, map[string]string{"key": "1"}, `geneve: unknown option "key": valid options are vni`},
		{method.GRE{}, method.IPv4, map[string]string{"key": "42"}, `gre: unknown option "key": it takes no options`},
		{method.Gretap{}, method.IPv4, map[string]string{"key": "0"}, `option key="0"`},
		{method.Gretap{}, method.IPv6, map[string]string{"key": "4294967296"}, `option key="4294967296"`},
		{method.Gretap{}, method.IPv4, map[string]string{"key": "nvgre"}, `option key="nvgre"`},
		{method.Gretap{}, method.IPv4, map[string]string{"vni": "42", "ttl": "1"}, `gretap: unknown option "ttl": valid options are key`},
		{method.IPIP{}, method.IPv6, nil, "ipip carries only ipv4, not ipv6"},
		{method.IP6IP6{}, method.IPv4, nil, "ip6ip6 carries only ipv6, not ipv4"},
		{method.IP6GRE{}, method.IPv6, map[string]string{"encaplimit": "4"}, `ip6gre: unknown option "encaplimit": it takes no options`},
	}
	for _, tt := range tests {
		env := &method.Env{Family: tt.family, Options: tt.opts}
		_, err := tt.m.Setup(context.Background(), env)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s %v: Setup error %v, want one containing %q", tt.m.Name(), tt.opts, err, tt.wantErr)
		}
	}
}

// TestKernelTunnelNotSupported runs Setup of every tunnel on a kernel
// without its option: it must fail with ErrNotSupported naming the option,
// and Teardown must still succeed. Where this kernel lacks the option (all
// of them on the host) the kernel itself refuses; where it has it (or has
// no readable config), the refusal is faked (method.SetKernelLacks) the
// way rtnetlink answers for a link kind it does not know, so the refusal
// path runs on any kernel.
func TestKernelTunnelNotSupported(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	cfg, cfgErr := hostinfo.LoadKernelConfig()
	for _, m := range kernelTunnels() {
		for _, family := range m.Families() {
			option := ""
			for _, r := range m.Requirements() {
				// gretap is in CONFIG_NET_IPGRE, ip6gretap in CONFIG_IPV6_GRE.
				if m.Name() == "gretap" && r.Kernel != map[string]string{method.IPv4: "CONFIG_NET_IPGRE", method.IPv6: "CONFIG_IPV6_GRE"}[family] {
					continue
				}
				if r.Kernel != "" && option == "" {
					option = r.Kernel
				}
			}
			if option == "" {
				t.Fatalf("%s/%s requires no kernel option", m.Name(), family)
			}
			fake := cfgErr != nil || hostinfo.HasKernelFeature(cfg, option)
			t.Run(m.Name()+"/"+family, func(t *testing.T) {
				if fake {
					method.SetKernelLacks(t, option)
					t.Logf("this kernel has %s (or no readable config): its refusal is faked", option)
				}
				l := testbedtest.New(t, 1500)
				env := &method.Env{A: l.A, B: l.B, Family: family, UnderlayMTU: 1500,
					OverlayMTU: 1500 - m.Overhead(family), Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
				_, err := m.Setup(context.Background(), env)
				if !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks "+option) {
					t.Errorf("Setup error %v, want ErrNotSupported naming %s", err, option)
				}
				if err := m.Teardown(context.Background(), env); err != nil {
					t.Errorf("Teardown after failed Setup: %v", err)
				}
			})
		}
	}
}
