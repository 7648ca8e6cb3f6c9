package fou

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Port is a FOU or GUE receive port of one namespace: the kernel's UDP
// socket on Port (of Family, "ipv4" or "ipv6") that takes the
// encapsulation off and hands the inner packet, of IP protocol Proto
// (fou; 0 for gue, whose header names it), to the tunnels.
type Port struct {
	Family string
	Port   int
	Proto  uint8
	GUE    bool
}

// String is the port as "ip fou add" takes it.
func (p Port) String() string {
	s := "port " + strconv.Itoa(p.Port)
	if p.GUE {
		s += " gue"
	} else {
		s += " ipproto " + strconv.Itoa(int(p.Proto))
	}
	if p.Family == method.IPv6 {
		s += " -6"
	}
	return s
}

func (p Port) fou() netlink.Fou {
	f := netlink.Fou{Family: unix.AF_INET, Port: p.Port, Protocol: int(p.Proto), EncapType: netlink.FOU_ENCAP_DIRECT}
	if p.Family == method.IPv6 {
		f.Family = unix.AF_INET6
	}
	if p.GUE {
		f.EncapType, f.Protocol = netlink.FOU_ENCAP_GUE, 0
	}
	return f
}

// journal names the journal entry of p on side (both sides of a local
// testbed share one directory).
func (p Port) journal(side string) string {
	return fmt.Sprintf("fou-%s-%s-%d", side, p.Family, p.Port)
}

// openPort opens p on ep. A kernel without FOU (no generic netlink family
// "fou") is ErrNotSupported, as is an IPv6 port where fou6 cannot be
// loaded.
func openPort(env *method.Env, ep *testbed.Endpoint, p Port) error {
	err := env.FakeKernelErr("CONFIG_NET_FOU", unix.ENOENT)
	if err == nil {
		_, err = opOpenPort.Call(context.Background(), ep, p)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%s: ip fou add %s: %w: kernel lacks CONFIG_NET_FOU (%w)", ep.Side, p, method.ErrNotSupported, err)
	case errors.Is(err, unix.EPROTONOSUPPORT):
		return fmt.Errorf("%s: ip fou add %s: %w: kernel lacks CONFIG_IPV6_FOU_TUNNEL (%w)", ep.Side, p, method.ErrNotSupported, err)
	case errors.Is(err, unix.EALREADY) || errors.Is(err, unix.EADDRINUSE):
		return fmt.Errorf("%s: ip fou add %s: UDP port %d is taken on this host; choose another with option port (%w)", ep.Side, p, p.Port, err)
	}
	return fmt.Errorf("%s: ip fou add %s: %w", ep.Side, p, err)
}

// closePort closes p on ep if this run opened it.
func closePort(ep *testbed.Endpoint, p Port) error {
	if _, err := opClosePort.Call(context.Background(), ep, p); err != nil {
		return fmt.Errorf("%s: ip fou del %s: %w", ep.Side, p, err)
	}
	return nil
}

// ListPorts lists the FOU and GUE receive ports of ep's namespace (none
// on a kernel without FOU).
func ListPorts(ep *testbed.Endpoint) ([]Port, error) {
	return opListPorts.Call(context.Background(), ep, struct{}{})
}

var (
	// opOpenPort opens a port in the endpoint's namespace on its host,
	// journaled first (testbed.UndoDelFou) and taken out of the journal
	// again when the kernel refuses it: the port may be the host's own.
	opOpenPort = testbed.NewOp("fou.open-port", func(_ context.Context, ep *testbed.Endpoint, p Port) (struct{}, error) {
		// Without fou, no generic netlink family "fou" (ENOENT) is the
		// answer, before fou6 is asked for. The family's request does not
		// load the module on every kernel (not on the lab's Debian 6.1):
		// modprobe does.
		if _, err := netlink.FouFamilyId(); err != nil {
			_ = exec.Command("modprobe", "-q", "fou").Run()
			if _, err := netlink.FouFamilyId(); err != nil {
				return struct{}{}, fmt.Errorf("generic netlink family fou (after modprobe fou): %w", err)
			}
		}
		if p.Family == method.IPv6 {
			if err := loadFou6(); err != nil {
				return struct{}{}, err
			}
		}
		name := p.journal(ep.Side)
		if ep.Dir != "" {
			if err := testbed.WriteUndo(ep.Dir, name, testbed.Undo{Kind: testbed.UndoDelFou, Port: p.Port, Value: p.Family}); err != nil {
				return struct{}{}, err
			}
		}
		err := ep.Do(func() error { return fouAdd(p) })
		if err != nil && ep.Dir != "" {
			err = errors.Join(err, testbed.DropUndo(ep.Dir, name))
		}
		return struct{}{}, err
	})
	// opClosePort closes a port the run opened (its journal holds it;
	// an endpoint without a directory keeps no journal and closes it
	// anyway). A port or a fou module already gone is no error.
	opClosePort = testbed.NewOp("fou.close-port", func(_ context.Context, ep *testbed.Endpoint, p Port) (struct{}, error) {
		name := p.journal(ep.Side)
		if ep.Dir != "" && !testbed.HasUndo(ep.Dir, name) {
			return struct{}{}, nil
		}
		err := ep.Do(func() error { return netlink.FouDel(p.fou()) })
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			err = nil
		}
		if err == nil && ep.Dir != "" {
			err = testbed.DropUndo(ep.Dir, name)
		}
		return struct{}{}, err
	})
	opListPorts = testbed.NewOp("fou.list-ports", func(_ context.Context, ep *testbed.Endpoint, _ struct{}) ([]Port, error) {
		var fous []netlink.Fou
		err := ep.Do(func() error {
			var err error
			fous, err = netlink.FouList(unix.AF_UNSPEC)
			return err
		})
		if errors.Is(err, unix.ENOENT) {
			return nil, nil // no fou module: no port
		}
		var ports []Port
		for _, f := range fous {
			p := Port{Family: method.IPv4, Port: f.Port, Proto: uint8(f.Protocol), GUE: f.EncapType == netlink.FOU_ENCAP_GUE}
			if f.Family == unix.AF_INET6 {
				p.Family = method.IPv6
			}
			ports = append(ports, p)
		}
		return ports, err
	})
)

// fouAdd sends FOU_CMD_ADD for p from this thread's namespace, as "ip
// fou add" does: netlink.FouAdd always sends FOU_ATTR_IPPROTO, 0 for a
// gue port, which the lab's Debian 6.1 kernel refuses ("numerical result
// out of range"); here a gue port has none.
func fouAdd(p Port) error {
	id, err := netlink.FouFamilyId()
	if err != nil {
		return err
	}
	f := p.fou()
	req := nl.NewNetlinkRequest(id, unix.NLM_F_ACK)
	raw := []byte{netlink.FOU_CMD_ADD, 1, 0, 0}
	attrs := []*nl.RtAttr{
		nl.NewRtAttr(netlink.FOU_ATTR_PORT, binary.BigEndian.AppendUint16(nil, uint16(f.Port))),
		nl.NewRtAttr(netlink.FOU_ATTR_TYPE, []byte{uint8(f.EncapType)}),
		nl.NewRtAttr(netlink.FOU_ATTR_AF, []byte{uint8(f.Family)}),
	}
	if !p.GUE {
		attrs = append(attrs, nl.NewRtAttr(netlink.FOU_ATTR_IPPROTO, []byte{p.Proto}))
	}
	for _, a := range attrs {
		raw = append(raw, a.Serialize()...)
	}
	req.AddRawData(raw)
	_, err = req.Execute(unix.NETLINK_GENERIC, 0)
	return err
}

// loadFou6 loads fou6, which gives ip6tnl and ip6gre their fou and gue
// encapsulation (nothing loads it on demand). Its failure wraps
// EPROTONOSUPPORT.
func loadFou6() error {
	if _, err := os.Stat("/sys/module/fou6"); err == nil {
		return nil
	}
	out, err := exec.Command("modprobe", "-q", "fou6").CombinedOutput()
	if err != nil {
		return fmt.Errorf("modprobe fou6: %v: %s: %w", err, strings.TrimSpace(string(out)), unix.EPROTONOSUPPORT)
	}
	return nil
}

// ip6greArgs are the ip6gre device addIP6GRE creates; Key 0 is none.
type ip6greArgs struct {
	Name                  string
	Local, Remote         netip.Addr
	EncapType, EncapDport uint16
	Key                   uint32
}

// opAddIP6GRE creates an ip6gre device with a UDP encapsulation by a raw
// RTM_NEWLINK, because netlink.Gretun cannot set IFLA_GRE_FLAGS: without
// IP6_TNL_F_IGN_ENCAP_LIMIT the kernel puts an 8-byte destination options
// header in front of every packet. It is what "ip link add NAME type
// ip6gre local L remote R ttl 64 encaplimit none encap fou|gue
// encap-sport auto encap-dport P noencap-csum [key K]" sends, from the
// endpoint's namespace on its host.
var opAddIP6GRE = testbed.NewOp("fou.add-ip6gre", func(_ context.Context, ep *testbed.Endpoint, a ip6greArgs) (struct{}, error) {
	if !a.Local.Is6() || !a.Remote.Is6() {
		return struct{}{}, fmt.Errorf("ip6gre needs IPv6 endpoints, got %s and %s", a.Local, a.Remote)
	}
	req := nl.NewNetlinkRequest(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(a.Name)))
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("ip6gre"))
	data := info.AddRtAttr(nl.IFLA_INFO_DATA, nil)
	data.AddRtAttr(nl.IFLA_GRE_LOCAL, a.Local.AsSlice())
	data.AddRtAttr(nl.IFLA_GRE_REMOTE, a.Remote.AsSlice())
	data.AddRtAttr(nl.IFLA_GRE_TTL, nl.Uint8Attr(tunnelTTL))
	data.AddRtAttr(nl.IFLA_GRE_FLAGS, nl.Uint32Attr(ip6TnlIgnEncapLimit))
	data.AddRtAttr(nl.IFLA_GRE_ENCAP_TYPE, nl.Uint16Attr(a.EncapType))
	data.AddRtAttr(nl.IFLA_GRE_ENCAP_FLAGS, nl.Uint16Attr(0))
	data.AddRtAttr(nl.IFLA_GRE_ENCAP_SPORT, binary.BigEndian.AppendUint16(nil, 0))
	data.AddRtAttr(nl.IFLA_GRE_ENCAP_DPORT, binary.BigEndian.AppendUint16(nil, a.EncapDport))
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
