package ebpftun_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ebpftun"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/wire"
)

func ebpfMethods() []method.Method {
	return []method.Method{ebpftun.EBPFGeneve, ebpftun.EBPFVXLAN, ebpftun.EBPFGRE, ebpftun.EBPFIPIP}
}

// requireEBPF skips t when the kernel cannot run the eBPF data path.
func requireEBPF(t testing.TB) {
	t.Helper()
	if err := ebpf.Probe(); err != nil {
		t.Skipf("the eBPF data path cannot run here: needs %v", err)
	}
}

// requireFamilyChange skips t when m carries family over an underlay of
// the other family and the kernel cannot decapsulate that.
func requireFamilyChange(t testing.TB, m method.Method, family string) {
	t.Helper()
	if (m == ebpftun.EBPFGRE || m == ebpftun.EBPFIPIP) && family == method.IPv6 {
		if err := ebpf.ProbeFamilyChange(); err != nil {
			t.Skipf("IPv6 over the IPv4 underlay needs %v", err)
		}
	}
}

// ebpfWire is what every frame of m must look like on the underlay.
func ebpfWire(m method.Method, family string, vni uint32) methodtest.TunnelWire {
	return tunnelCheck(m, family, vni, true)
}

// tunnelCheck is ebpfWire; hashPorts also wants outer UDP source ports from
// tunbench's flow-hash range (the kernel's devices use another).
func tunnelCheck(m method.Method, family string, vni uint32, hashPorts bool) methodtest.TunnelWire {
	udp := func(port uint16, encap string, firstByte byte) methodtest.TunnelWire {
		return methodtest.TunnelWire{Underlay: family, Proto: wire.ProtoUDP, Check: func(f wire.Frame) string {
			switch {
			case f.DstPort != port || f.Encap != encap:
				return fmt.Sprintf("want %s on UDP port %d", encap, port)
			case hashPorts && f.SrcPort < 49152:
				return fmt.Sprintf("source port %d, want one from the flow hash in 49152-65535", f.SrcPort)
			case f.VNI != vni:
				return fmt.Sprintf("VNI %d, want %d", f.VNI, vni)
			case len(f.Payload) < 8 || f.Payload[0] != firstByte:
				return fmt.Sprintf("first tunnel header byte %#x, want %#x", f.Payload[:min(1, len(f.Payload))], firstByte)
			case f.Inner == nil || !f.Inner.Ethernet:
				return "want an inner Ethernet frame"
			}
			return ""
		}}
	}
	switch m.Name() {
	case "ebpf-geneve":
		return udp(method.GenevePort, wire.EncapGeneve, 0) // version 0, no options
	case "ebpf-vxlan":
		return udp(method.VXLANPort, wire.EncapVXLAN, 0x08) // I flag
	case "ebpf-gre":
		return methodtest.TunnelWire{Underlay: method.IPv4, Proto: wire.ProtoGRE, Check: methodtest.CheckGRE(vni, methodtest.L3Protocols...)}
	}
	return methodtest.TunnelWire{Underlay: method.IPv4, Proto: wire.ProtoIPIP, Check: func(f wire.Frame) string {
		if f.Encap != wire.EncapIP4 || f.Inner == nil || f.Inner.Family != wire.IPv4 {
			return "want an IPv4 packet right behind the outer header"
		}
		return ""
	}}
}

// TestEBPFTunnel carries traffic over each eBPF method on the host (whose
// kernel lacks geneve, gre and ipip devices but has tc BPF) and checks
// every frame on the underlay, the overlay MTU and the teardown.
func TestEBPFTunnel(t *testing.T) {
	for _, m := range ebpfMethods() {
		for _, family := range m.Families() {
			t.Run(m.Name()+"/"+family, func(t *testing.T) {
				requireEBPF(t)
				requireFamilyChange(t, m, family)
				var opts map[string]string
				vni := uint32(42)
				if m == ebpftun.EBPFGRE {
					vni = 0
				}
				if family == method.IPv6 && m != ebpftun.EBPFGRE {
					opts, vni = map[string]string{"vni": "4242"}, 4242
				}
				methodtest.LabTunnel(t, m, family, opts, ebpfWire(m, family, vni))
			})
		}
	}
}

// TestEBPFDeviceDecap carries traffic over ebpf-vxlan with decap=device
// in each family: the tc egress program encapsulates, a kernel VXLAN
// device in external (collect_md) mode receives and decapsulates (the
// ingress program has no decap entry and passes the packets on). Ping
// and full-size ping cross, iperf3 passes, every frame on the underlay
// is the tc path's VXLAN, the sockets are the declared ones, and
// teardown leaves the links as they were (methodtest.Setup).
func TestEBPFDeviceDecap(t *testing.T) {
	for _, family := range ebpftun.EBPFVXLAN.Families() {
		t.Run(family, func(t *testing.T) {
			requireEBPF(t)
			l, env := methodtest.LabTunnel(t, ebpftun.EBPFVXLAN, family, map[string]string{"decap": "device"},
				ebpfWire(ebpftun.EBPFVXLAN, family, 42))
			// The device received the tunnel's packets: the ingress
			// program decapsulated none.
			s, err := ebpftun.Stats(context.Background(), l.B, ebpftun.PinDir(env, l.B))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Decaps) != 0 {
				t.Errorf("b's ingress program has decap entries %+v, want none with decap=device", s.Decaps)
			}
			dev, err := l.B.NL.LinkByName(env.Prefix + "-evx")
			if err != nil {
				t.Fatalf("b: the collect_md device: %v", err)
			}
			if st := dev.Attrs().Statistics; st == nil || st.RxPackets == 0 {
				t.Errorf("b: %s received no packets (%+v)", env.Prefix+"-evx", st)
			}
			c, err := ebpftun.EBPFVXLAN.Counters(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if got := c["ebpf.b.device"]; !strings.HasPrefix(got, env.Prefix+"-evx rx packets ") || strings.HasPrefix(got, env.Prefix+"-evx rx packets 0 ") {
				t.Errorf("b's device counter %q, want the device's rx packets (not 0) and bytes", got)
			}
		})
	}
}

// TestEBPFOptions checks option validation, which happens before anything
// is created (so a nil testbed is fine).
func TestEBPFOptions(t *testing.T) {
	tests := []struct {
		m       method.Method
		family  string
		opts    map[string]string
		wantErr string
	}{
		{ebpftun.EBPFGeneve, method.IPv4, map[string]string{"vni": "0"}, `option vni="0"`},
		{ebpftun.EBPFVXLAN, method.IPv4, map[string]string{"key": "1"}, `ebpf-vxlan: unknown option "key": valid options are decap, srcport, vni`},
		{ebpftun.EBPFVXLAN, method.IPv4, map[string]string{"decap": "xdp"}, `option decap="xdp"`},
		{ebpftun.EBPFGeneve, method.IPv4, map[string]string{"decap": "device"}, `ebpf-geneve: unknown option "decap"`},
		{ebpftun.EBPFGRE, method.IPv4, map[string]string{"vni": "1"}, `ebpf-gre: unknown option "vni": valid options are key`},
		{ebpftun.EBPFIPIP, method.IPv6, nil, "ebpf-ipip carries only ipv4, not ipv6"},
		{ebpftun.EBPFGeneve, method.IPv6, map[string]string{"rules": "100"}, `ebpf-geneve: option "rules" is gone: the number of rules is the tunnels dimension now: give tunnels: [N] in the scenario (or --tunnels N)`},
		{ebpftun.EBPFVXLAN, method.IPv4, map[string]string{"srcport": "65536"}, `option srcport="65536"`},
	}
	for _, tt := range tests {
		env := &method.Env{Family: tt.family, Options: tt.opts, UnderlayMTU: 1500}
		_, err := tt.m.Setup(context.Background(), env)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s %v: Setup error %v, want one containing %q", tt.m.Name(), tt.opts, err, tt.wantErr)
		}
	}
}

// TestEBPFRequirements: a kernel without what the data path needs gets
// one line naming it, marked ErrNotSupported.
func TestEBPFRequirements(t *testing.T) {
	reqs := []method.Requirement{{Feature: "tc BPF programs", Probe: func() error { return errors.New("helper bpf_skb_adjust_room (missing)") }}}
	err := method.Check(method.KernelFunc(func(string, string) (bool, error) { return true, nil }), reqs)
	if !errors.Is(err, method.ErrNotSupported) || !strings.HasSuffix(err.Error(), "needs tc BPF programs: helper bpf_skb_adjust_room (missing)") {
		t.Errorf("Check: %v", err)
	}
	for _, m := range ebpfMethods() {
		var feature bool
		for _, r := range m.Requirements() {
			feature = feature || (r.Feature != "" && r.Probe != nil)
		}
		if !feature {
			t.Errorf("%s: no probed kernel feature among its requirements", m.Name())
		}
	}
}

// TestFillerAddrs: the scale measurement's fillers spread evenly over
// their block in bit-reversed order, stay inside it, skip the overlay
// addresses, and stop when the block is full.
func TestFillerAddrs(t *testing.T) {
	got := ebpf.FillerAddrs(netip.MustParsePrefix("198.19.0.0/17"), 4)
	want := []netip.Addr{netip.MustParseAddr("198.19.0.0"), netip.MustParseAddr("198.19.64.0"),
		netip.MustParseAddr("198.19.32.0"), netip.MustParseAddr("198.19.96.0")}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("first IPv4 fillers (-want +got):\n%s", diff)
	}
	got = ebpf.FillerAddrs(netip.MustParsePrefix("2001:2:0:1::/64"), 3)
	want = []netip.Addr{netip.MustParseAddr("2001:2:0:1::"), netip.MustParseAddr("2001:2:0:1:8000::"),
		netip.MustParseAddr("2001:2:0:1:4000::")}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("first IPv6 fillers (-want +got):\n%s", diff)
	}

	like := ebpf.Rule{Encap: ebpf.Geneve, VNI: 42}
	all := ebpftun.FillerRules(method.IPv4, 40_000, like)
	if len(all) != 1<<15-2 {
		t.Fatalf("IPv4 fillers: %d, want the /17 less the two overlay addresses (%d)", len(all), 1<<15-2)
	}
	block := netip.MustParsePrefix("198.19.0.0/17")
	seen := map[netip.Prefix]bool{}
	for i, r := range all {
		if r.ID != uint32(i+2) || r.Dst.Bits() != 32 || !block.Contains(r.Dst.Addr()) || seen[r.Dst] {
			t.Fatalf("filler %d: ID %d, %s: want ID %d, a new host prefix in %s", i, r.ID, r.Dst, i+2, block)
		}
		if a := r.Dst.Addr(); a == method.OverlayA4.Addr() || a == method.OverlayB4.Addr() {
			t.Fatalf("filler %d is an overlay address: %s", i, a)
		}
		seen[r.Dst] = true
	}
	if diff := cmp.Diff(ebpftun.FillerRules(method.IPv6, 10, like), ebpftun.FillerRules(method.IPv6, 1000, like)[:10],
		cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("the first 10 of 1000 IPv6 fillers are not the 10 fillers (-10 +1000):\n%s", diff)
	}
}
