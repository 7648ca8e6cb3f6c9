package ebpftun_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ebpftun"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// ebpfInterop is ebpf-X on one side and the kernel's own device for the
// same encapsulation on the other: the kernel's geneve, vxlan, gre or
// ipip device, which the host lacks (except vxlan) and the kernel lab has.
type ebpfInterop struct {
	ebpftun.EBPF
	ebpfOn string // side running the eBPF data path: "a" or "b"
	kernel method.Method
}

func (m ebpfInterop) Name() string { return m.EBPF.Name() + "-with-kernel-" + m.kernel.Name() }

// Listens: the kernel device's sockets, on the side that has it (the
// eBPF side opens none).
func (m ebpfInterop) Listens(opts method.Values, family string) []method.Listen {
	kopts, _ := method.ParseOptions(m.kernel, nil)
	ls, _ := method.ListensOf(m.kernel, kopts, family)
	kside := "a"
	if m.ebpfOn == "a" {
		kside = "b"
	}
	for i := range ls {
		ls[i].Side = kside
	}
	return ls
}

func (m ebpfInterop) Requirements() []method.Requirement {
	return append(m.EBPF.Requirements(), m.kernel.Requirements()...)
}

func (m ebpfInterop) kernelDev(env *method.Env) string { return env.Prefix + "-k" }

func (m ebpfInterop) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	oa, ob := method.Overlay(env.Family)
	devs := map[string][]string{"a": {env.A.Dev}, "b": {env.B.Dev}}
	for _, ep := range env.Endpoints() {
		if ep.Side == m.ebpfOn {
			if err := ebpftun.SetupEBPFSide(m.EBPF, env, ep); err != nil {
				return nil, err
			}
			continue
		}
		if err := m.setupKernelSide(env, ep); err != nil {
			return nil, err
		}
		devs[ep.Side] = append(devs[ep.Side], m.kernelDev(env))
	}
	return &method.Path{A: oa.Addr(), B: ob.Addr(), Devices: devs, Variant: "interop"}, nil
}

// setupKernelSide creates the kernel device on ep toward the peer's
// underlay address, what "ip link add NAME type geneve|vxlan|gre|ipip ...
// remote PEER" does. Geneve and VXLAN devices get ebpf.InnerMAC, the inner
// destination the eBPF side writes, accept IPv6 UDP without a checksum
// (the eBPF side sends none) and know the peer's overlay address
// statically: the eBPF side answers no ARP or neighbour solicitation.
func (m ebpfInterop) setupKernelSide(env *method.Env, ep *testbed.Endpoint) error {
	peer := env.Peer(ep)
	underlay := env.Family
	if m.kernel.Name() == "gre" || m.kernel.Name() == "ipip" {
		underlay = method.IPv4
	}
	local, remote := net.IP(ep.Addr(underlay).AsSlice()), net.IP(peer.Addr(underlay).AsSlice())
	attrs := netlink.LinkAttrs{Name: m.kernelDev(env), MTU: env.OverlayMTU}
	var link netlink.Link
	l2 := false
	switch m.kernel.Name() {
	case "vxlan":
		under, err := ep.NL.LinkByName(ep.Dev)
		if err != nil {
			return err
		}
		attrs.HardwareAddr = ebpf.InnerMAC
		link, l2 = &netlink.Vxlan{LinkAttrs: attrs, VxlanId: 42, VtepDevIndex: under.Attrs().Index, SrcAddr: local,
			Group: remote, Port: method.VXLANPort, TTL: 64, UDP6ZeroCSumRx: true}, true
	case "geneve":
		// netlink.Geneve cannot send udp6zerocsumrx: a raw request.
		if err := addGeneveZeroCsum6Rx(ep, attrs.Name, env.OverlayMTU, remote); err != nil {
			return fmt.Errorf("%s: create kernel geneve: %w", ep.Side, err)
		}
		l2 = true
	case "gre":
		link = &netlink.Gretun{LinkAttrs: attrs, Local: local, Remote: remote, Ttl: 64}
	case "ipip":
		link = &netlink.Iptun{LinkAttrs: attrs, Local: local, Remote: remote, Ttl: 64}
	default:
		return fmt.Errorf("no kernel device for %s", m.kernel.Name())
	}
	if link != nil {
		if err := ep.NL.LinkAdd(link); err != nil {
			return fmt.Errorf("%s: create kernel %s: %w", ep.Side, m.kernel.Name(), err)
		}
	}
	created, err := ep.NL.LinkByName(attrs.Name)
	if err != nil {
		return err
	}
	oa, ob := method.Overlay(env.Family)
	mine, theirs := oa, ob
	if ep == env.B {
		mine, theirs = ob, oa
	}
	addr := &netlink.Addr{IPNet: testbed.PrefixNet(mine)}
	if env.Family == method.IPv6 {
		addr.Flags = unix.IFA_F_NODAD
	}
	if err := ep.NL.AddrAdd(created, addr); err != nil {
		return fmt.Errorf("%s: add %s: %w", ep.Side, mine, err)
	}
	if err := ep.NL.LinkSetUp(created); err != nil {
		return err
	}
	if l2 {
		if err := ep.NL.NeighAdd(&netlink.Neigh{LinkIndex: created.Attrs().Index, IP: net.IP(theirs.Addr().AsSlice()),
			HardwareAddr: ebpf.InnerSrcMAC, State: netlink.NUD_PERMANENT}); err != nil {
			return fmt.Errorf("%s: static neighbour %s: %w", ep.Side, theirs.Addr(), err)
		}
	}
	return nil
}

// addGeneveZeroCsum6Rx is "ip link add NAME mtu MTU address InnerMAC type
// geneve id 42 remote REMOTE dstport 6081 ttl 64 udp6zerocsumrx", run in
// ep's namespace.
func addGeneveZeroCsum6Rx(ep *testbed.Endpoint, name string, mtu int, remote net.IP) error {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(mtu))))
	req.AddData(nl.NewRtAttr(unix.IFLA_ADDRESS, []byte(ebpf.InnerMAC)))
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("geneve"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(nl.IFLA_GENEVE_ID, nl.Uint32Attr(42))
	if ip4 := remote.To4(); ip4 != nil {
		data.AddRtAttr(nl.IFLA_GENEVE_REMOTE, []byte(ip4))
	} else {
		data.AddRtAttr(nl.IFLA_GENEVE_REMOTE6, []byte(remote))
	}
	data.AddRtAttr(nl.IFLA_GENEVE_PORT, binary.BigEndian.AppendUint16(nil, method.GenevePort))
	data.AddRtAttr(nl.IFLA_GENEVE_TTL, nl.Uint8Attr(64))
	data.AddRtAttr(nl.IFLA_GENEVE_UDP_ZERO_CSUM6_RX, nl.Uint8Attr(1))
	req.AddData(info)
	return ep.Do(func() error {
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
}

func (m ebpfInterop) Teardown(_ context.Context, env *method.Env) error {
	var errs []error
	for _, ep := range env.Endpoints() {
		if ep == nil || ep.NL == nil {
			continue
		}
		if ep.Side == m.ebpfOn {
			errs = append(errs, ebpftun.TeardownEBPFSide(m.EBPF, env, ep))
			continue
		}
		if l, err := ep.NL.LinkByName(m.kernelDev(env)); err == nil {
			errs = append(errs, ep.NL.LinkDel(l))
		}
	}
	return errors.Join(errs...)
}

// TestLabEBPFInterop runs, in the kernel lab, each eBPF method against the
// kernel's device for its encapsulation, in both directions: ebpf-X
// encapsulating toward the kernel device (side a sends with eBPF, the
// kernel decapsulates on b) and the kernel device encapsulating toward
// ebpf-X. Traffic must flow (ping, full-size ping, iperf3) and every a-to-b
// frame must pass the wire check.
func TestLabEBPFInterop(t *testing.T) {
	for _, tt := range []struct {
		m      ebpftun.EBPF
		kernel method.Method
	}{
		{ebpftun.EBPFGeneve, kernel.Geneve{}},
		{ebpftun.EBPFVXLAN, kernel.VXLAN{}},
		{ebpftun.EBPFGRE, kernel.GRE{}},
		{ebpftun.EBPFIPIP, kernel.IPIP{}},
	} {
		for _, family := range tt.m.Families() {
			for _, ebpfOn := range []string{"a", "b"} {
				dir := "ebpf-to-kernel"
				if ebpfOn == "b" {
					dir = "kernel-to-ebpf"
				}
				t.Run(tt.m.Name()+"/"+family+"/"+dir, func(t *testing.T) {
					requireEBPF(t)
					requireFamilyChange(t, tt.m, family)
					m := ebpfInterop{EBPF: tt.m, ebpfOn: ebpfOn, kernel: tt.kernel}
					vni := uint32(42)
					if tt.m == ebpftun.EBPFGRE {
						vni = 0
					}
					methodtest.LabTunnel(t, m, family, nil, tunnelCheck(tt.m, family, vni, ebpfOn == "a"))
				})
			}
		}
	}
}
