package kernel

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The kernel tunnel methods (geneve, gre, gretap, ipip, ip6ip6, ip6gre)
// share one shape: a device per side between the two underlay addresses,
// with the side's overlay address on it and the overlay MTU set. They
// differ in the device and in the underlay family; this file holds what
// they share.

// kernelTunnel describes one side's device of a kernel tunnel method.
type kernelTunnel struct {
	// kind is the link kind created ("gre", "ip6gretap"...), recorded as
	// Path.Variant.
	kind string
	// suffix follows env.Prefix in the device name (at most 6 bytes).
	suffix string
	// underlay is the family of the outer header.
	underlay string
	// config is the kernel option that provides kind.
	config string
	// link is the device called name from local to remote (underlay
	// addresses). When nil, the device is an ip6gre or ip6gretap with GRE
	// key ip6greKey (0: none), which addIP6GRE creates.
	link      func(name string, local, remote net.IP) netlink.Link
	ip6greKey uint32
}

// The links and route encaps the kernel tunnels pass to a remote agent.
func init() {
	testbed.RegisterWireTypes(&netlink.Vxlan{}, &netlink.Geneve{}, &netlink.Gretun{}, &netlink.Gretap{},
		&netlink.Iptun{}, &netlink.Ip6tnl{}, &netlink.Sittun{}, &netlink.SEG6Encap{}, &netlink.SEG6LocalEncap{})
}

// tunnelName is the device name of a kernel tunnel method.
func tunnelName(env *method.Env, suffix string) string { return env.Prefix + suffix }

// planTunnel is kt's plan for each side of env (a, b): one device
// between the underlay addresses, with the side's overlay address and the
// overlay MTU. It is pure: it reads env and touches no host.
func planTunnel(env *method.Env, kt kernelTunnel) [2]method.Plan {
	oa, ob := method.Overlay(env.Family)
	return planDevice(env, kt, tunnelName(env, kt.suffix), oa, ob)
}

// tunnelTTL is the outer TTL or hop limit of every kernel tunnel, set
// rather than inherited from the inner packet.
const tunnelTTL = 64

// ip6TnlIgnEncapLimit is IP6_TNL_F_IGN_ENCAP_LIMIT (linux/ip6_tunnel.h):
// the tunnel adds no encapsulation limit option.
const ip6TnlIgnEncapLimit = 0x1

// addIP6GRE creates an ip6gre or ip6gretap device with a raw RTM_NEWLINK
// request, because netlink.Gretun and netlink.Gretap cannot set
// IFLA_GRE_FLAGS: without IP6_TNL_F_IGN_ENCAP_LIMIT the kernel puts an
// 8-byte destination options header (tunnel encapsulation limit, RFC 2473)
// in front of every packet. key 0 means no GRE key. The request runs on a
// thread inside ep's namespace, so the kernel creates the device there.
// It is what "ip link add NAME type KIND local L remote R ttl 64
// encaplimit none [key K]" sends.
func addIP6GRE(ep *testbed.Endpoint, kind, name string, local, remote netip.Addr, key uint32) error {
	if !local.Is6() || !remote.Is6() {
		return fmt.Errorf("%s needs IPv6 endpoints, got %s and %s", kind, local, remote)
	}
	_, err := opAddIP6GRE.Call(context.Background(), ep, ip6greArgs{Kind: kind, Name: name, Local: local, Remote: remote, Key: key})
	return err
}

// ip6greArgs are the device addIP6GRE creates.
type ip6greArgs struct {
	Kind, Name    string
	Local, Remote netip.Addr
	Key           uint32
}

// opAddIP6GRE sends the RTM_NEWLINK of addIP6GRE from the endpoint's
// namespace on its host.
var opAddIP6GRE = testbed.NewOp("kernel.add-ip6gre", func(_ context.Context, ep *testbed.Endpoint, a ip6greArgs) (struct{}, error) {
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(a.Name)))
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated(a.Kind))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(nl.IFLA_GRE_LOCAL, a.Local.AsSlice())
	data.AddRtAttr(nl.IFLA_GRE_REMOTE, a.Remote.AsSlice())
	data.AddRtAttr(nl.IFLA_GRE_TTL, nl.Uint8Attr(tunnelTTL))
	data.AddRtAttr(nl.IFLA_GRE_FLAGS, nl.Uint32Attr(ip6TnlIgnEncapLimit))
	if a.Key != 0 {
		flags := binary.BigEndian.AppendUint16(nil, nl.GRE_KEY)
		k := binary.BigEndian.AppendUint32(nil, a.Key)
		data.AddRtAttr(nl.IFLA_GRE_IFLAGS, flags)
		data.AddRtAttr(nl.IFLA_GRE_OFLAGS, flags)
		data.AddRtAttr(nl.IFLA_GRE_IKEY, k)
		data.AddRtAttr(nl.IFLA_GRE_OKEY, k)
	}
	req.AddData(info)
	return struct{}{}, ep.Do(func() error {
		_, err := req.Execute(unix.NETLINK_ROUTE, 0)
		return err
	})
})
