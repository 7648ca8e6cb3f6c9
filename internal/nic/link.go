package nic

import (
	"fmt"
	"net"
	"sort"

	rtnl "github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/tunbench/tunbench/internal/result"
)

// Describe returns the kind ("veth", "vxlan", "tuntap", ...), MTU and
// features of dev in ns, as `ip -d link show dev` and `ethtool -k dev`
// would. Side is left empty for the caller to fill.
func Describe(ns netns.NsHandle, dev string) (result.Device, error) {
	h, err := rtnl.NewHandleAt(ns)
	if err != nil {
		return result.Device{}, fmt.Errorf("open rtnetlink in %s: %w", ns, err)
	}
	defer h.Close()
	link, err := h.LinkByName(dev)
	if err != nil {
		return result.Device{}, fmt.Errorf("look up link %s: %w", dev, err)
	}
	c, err := dial(ns)
	if err != nil {
		return result.Device{}, err
	}
	defer c.close()
	return c.describe(link, "")
}

// DescribeAll describes every link in ns except loopback, in ifindex
// order, with Side set to side ("a" or "b").
func DescribeAll(ns netns.NsHandle, side string) ([]result.Device, error) {
	return DescribeExcept(ns, side, nil)
}

// DescribeExcept is DescribeAll without the links skip names (skip nil:
// none): a run with a thousand tunnels describes the measured one, not
// every device of the thousand (each an ethtool request).
func DescribeExcept(ns netns.NsHandle, side string, skip func(name string) bool) ([]result.Device, error) {
	h, err := rtnl.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("open rtnetlink in %s: %w", ns, err)
	}
	defer h.Close()
	links, err := Dump(h.LinkList)
	if err != nil {
		return nil, fmt.Errorf("list links in %s: %w", ns, err)
	}
	sort.Slice(links, func(i, j int) bool { return links[i].Attrs().Index < links[j].Attrs().Index })
	c, err := dial(ns)
	if err != nil {
		return nil, err
	}
	defer c.close()
	var devs []result.Device
	for _, l := range links {
		if l.Attrs().Flags&net.FlagLoopback != 0 || (skip != nil && skip(l.Attrs().Name)) {
			continue
		}
		d, err := c.describe(l, side)
		if err != nil {
			return nil, err
		}
		devs = append(devs, d)
	}
	return devs, nil
}

func (c *conn) describe(l rtnl.Link, side string) (result.Device, error) {
	a := l.Attrs()
	feats, err := c.features(a.Name)
	if err != nil {
		return result.Device{}, err
	}
	return result.Device{Side: side, Name: a.Name, Kind: l.Type(), MTU: a.MTU, Offloads: feats}, nil
}

// SetMTU sets the MTU of dev in ns, like `ip link set dev DEV mtu MTU`, and
// fails unless a re-read shows the new value.
func SetMTU(ns netns.NsHandle, dev string, mtu int) error {
	h, err := rtnl.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("open rtnetlink in %s: %w", ns, err)
	}
	defer h.Close()
	link, err := h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("look up link %s: %w", dev, err)
	}
	if err := h.LinkSetMTU(link, mtu); err != nil {
		return fmt.Errorf("set mtu of %s to %d: %w", dev, mtu, err)
	}
	link, err = h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("look up link %s: %w", dev, err)
	}
	if got := link.Attrs().MTU; got != mtu {
		return fmt.Errorf("set mtu of %s to %d: mtu is %d", dev, mtu, got)
	}
	return nil
}
