package method_test

import (
	"fmt"
	"testing"

	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/wire"
)

func ebpfMethods() []method.Method {
	return []method.Method{method.EBPFGeneve, method.EBPFVXLAN, method.EBPFGRE, method.EBPFIPIP}
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
	if (m == method.EBPFGRE || m == method.EBPFIPIP) && family == method.IPv6 {
		if err := ebpf.ProbeFamilyChange(); err != nil {
			t.Skipf("IPv6 over the IPv4 underlay needs %v", err)
		}
	}
}

// ebpfWire is what every frame of m must look like on the underlay.
func ebpfWire(m method.Method, family string, vni uint32) tunnelWire {
	return tunnelCheck(m, family, vni, true)
}

// tunnelCheck is ebpfWire; hashPorts also wants outer UDP source ports from
// tunbench's flow-hash range (the kernel's devices use another).
func tunnelCheck(m method.Method, family string, vni uint32, hashPorts bool) tunnelWire {
	udp := func(port uint16, encap string, firstByte byte) tunnelWire {
		return tunnelWire{underlay: family, proto: wire.ProtoUDP, check: func(f wire.Frame) string {
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
		return tunnelWire{underlay: method.IPv4, proto: wire.ProtoGRE, check: checkGRE(vni, l3Protocols...)}
	}
	return tunnelWire{underlay: method.IPv4, proto: wire.ProtoIPIP, check: func(f wire.Frame) string {
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
				if m == method.EBPFGRE {
					vni = 0
				}
				if family == method.IPv6 && m != method.EBPFGRE {
					opts, vni = map[string]string{"vni": "4242"}, 4242
				}
				labTunnel(t, m, family, opts, ebpfWire(m, family, vni))
			})
		}
	}
}
