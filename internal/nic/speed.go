package nic

import (
	"fmt"

	"github.com/mdlayher/netlink"
	rtnl "github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// speedUnknown is SPEED_UNKNOWN, what a driver reports without a link
// speed (a device that is down, or one that has none).
const speedUnknown = 0xffffffff

// LinkSpeed is what a device says about its link: its driver (as
// `ethtool -i` shows it) and its speed in Mb/s (as `ethtool` shows it;
// 0 when the driver reports none). Virtual drivers report a speed too
// (veth says 10000): see LineRate for what such a speed is worth.
type LinkSpeed struct {
	Driver    string
	SpeedMbps int
	// Kind is the rtnetlink link kind ("veth", "vxlan", "tuntap", ...);
	// "device" or empty for a device without one (a NIC).
	Kind string
}

// Speed reads the driver and link speed of dev in ns: the driver with the
// ETHTOOL_GDRVINFO ioctl, the speed with ETHTOOL_MSG_LINKMODES_GET, both
// on one ethtool netlink socket bound to ns.
func Speed(ns netns.NsHandle, dev string) (LinkSpeed, error) {
	c, err := dial(ns)
	if err != nil {
		return LinkSpeed{}, err
	}
	defer c.close()
	var ls LinkSpeed
	h, err := rtnl.NewHandleAt(ns)
	if err != nil {
		return ls, fmt.Errorf("open rtnetlink in %s: %w", ns, err)
	}
	defer h.Close()
	link, err := h.LinkByName(dev)
	if err != nil {
		return ls, fmt.Errorf("look up link %s: %w", dev, err)
	}
	ls.Kind = link.Type()
	rc, err := c.c.SyscallConn()
	if err != nil {
		return ls, fmt.Errorf("driver of %s: %w", dev, err)
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		// SIOCETHTOOL works on any socket: netlink sockets pass unknown
		// ioctls to the device layer of their own namespace.
		var info *unix.EthtoolDrvinfo
		info, ierr = unix.IoctlGetEthtoolDrvinfo(int(fd), dev)
		if ierr == nil {
			ls.Driver = unix.ByteSliceToString(info.Driver[:])
		}
	}); err != nil {
		return ls, fmt.Errorf("driver of %s: %w", dev, err)
	}
	if ierr != nil {
		return ls, fmt.Errorf("driver of %s (ETHTOOL_GDRVINFO): %w", dev, ierr)
	}
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, unix.ETHTOOL_A_LINKMODES_HEADER, dev, 0)
	req, err := ae.Encode()
	if err != nil {
		return ls, fmt.Errorf("encode link modes request for %s: %w", dev, err)
	}
	msgs, err := execute(c.c, c.family, unix.ETHTOOL_MSG_LINKMODES_GET, req, netlink.Request)
	if err != nil {
		return ls, fmt.Errorf("read link modes of %s: %w", dev, err)
	}
	speed, err := decodeSpeed(msgs[0].Data)
	if err != nil {
		return ls, fmt.Errorf("read link modes of %s: %w", dev, err)
	}
	ls.SpeedMbps = speed
	return ls, nil
}

// decodeSpeed returns ETHTOOL_A_LINKMODES_SPEED from a LINKMODES_GET
// reply, 0 when absent or SPEED_UNKNOWN.
func decodeSpeed(b []byte) (int, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return 0, err
	}
	speed := 0
	for ad.Next() {
		if ad.Type() == unix.ETHTOOL_A_LINKMODES_SPEED {
			if v := ad.Uint32(); v != speedUnknown {
				speed = int(v)
			}
		}
	}
	return speed, ad.Err()
}

// virtualDrivers report a speed that is a constant of the driver, not a
// property of any link: veth says 10000 Mb/s, tun 10 Mb/s.
var virtualDrivers = map[string]bool{
	"veth": true, "tun": true, "bridge": true, "vxlan": true, "geneve": true,
	"macvlan": true, "ipvlan": true, "dummy": true, "bonding": true, "team": true,
	"openvswitch": true, "vrf": true, "wireguard": true, "ip_gre": true, "ip6_gre": true,
	"ipip": true, "ip6_tunnel": true, "sit": true, "nlmon": true, "netkit": true,
	"virtio_net": true,
}

// Line-rate sources, as Derived.LineRateSource records them.
const (
	SourceDevice   = "device"
	SourceScenario = "scenario"
)

// LineRate decides the underlay's line rate in bit/s from what the device
// says and what the scenario gives (0 = not given). A physical device's
// speed wins: it is measured on the link the cell ran on, while the
// scenario's value is a statement about it. A virtual device's speed (a
// link with an rtnetlink kind such as veth or vxlan, or a driver such as
// veth, tun, bridge, vxlan, virtio_net) or an unknown speed counts as
// nothing, so the scenario's value is used, and without one the line
// rate is unknown (0, ""), never guessed.
func LineRate(ls LinkSpeed, scenarioBps float64) (bps float64, source string) {
	physical := ls.Driver != "" && !virtualDrivers[ls.Driver] && (ls.Kind == "" || ls.Kind == "device")
	if ls.SpeedMbps > 0 && physical {
		return float64(ls.SpeedMbps) * 1e6, SourceDevice
	}
	if scenarioBps > 0 {
		return scenarioBps, SourceScenario
	}
	return 0, ""
}
