package runner

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/sample"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// parallelTargets are the side-b addresses the parallel test's k
// processes send to, in process order: the measured tunnel's (path.B)
// for each, or, with p.Spread, side b's overlay address of the tunnel
// method.SpreadTunnels gives each process (method.ScaleOverlay; path.B
// for the measured one), and those tunnels' indexes.
func parallelTargets(path *method.Path, p result.Params, k int) ([]netip.Addr, []int) {
	addrs := make([]netip.Addr, k)
	if !p.Spread {
		for i := range addrs {
			addrs[i] = path.B
		}
		return addrs, nil
	}
	n := max(p.Tunnels, 1)
	idx := method.SpreadTunnels(n, k)
	m := method.MeasuredTunnel(n)
	for i, t := range idx {
		if t == m {
			addrs[i] = path.B // the measured tunnel's, as without spread
			continue
		}
		_, b := method.ScaleOverlay(p.Family, t, m)
		addrs[i] = b.Addr()
	}
	return addrs, idx
}

// spreadCounters reads, on side b, the counters of the device holding
// each of addrs (a spread parallel test's targets); a device that cannot
// be found or read has its error in its record.
type spreadCounters struct {
	tunnels []result.SpreadTunnel
	before  []sample.Counters
}

// beginSpread finds the devices of addrs on ep and reads their counters.
func beginSpread(ep *testbed.Endpoint, addrs []netip.Addr, idx []int) *spreadCounters {
	sc := &spreadCounters{tunnels: make([]result.SpreadTunnel, len(idx)), before: make([]sample.Counters, len(idx))}
	list, err := nic.Dump(func() ([]netlink.Addr, error) { return ep.NL.AddrList(nil, netlink.FAMILY_ALL) })
	for i, t := range idx {
		st := &sc.tunnels[i]
		loopback := false
		st.Tunnel, st.Address = t, addrs[i].String()
		if err != nil {
			st.Error = fmt.Sprintf("list addresses: %v", err)
			continue
		}
		for _, a := range list {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addrs[i] {
				if l, lerr := ep.NL.LinkByIndex(a.LinkIndex); lerr == nil {
					st.Device = l.Attrs().Name
					loopback = l.Attrs().Flags&net.FlagLoopback != 0
				}
				break
			}
		}
		switch {
		case st.Device == "":
			st.Error = "no device of side b holds " + st.Address
			continue
		case loopback:
			// srv6: the tunnel ends in a route (seg6local) that hands
			// the inner packet to the stack; lo counts none of it.
			st.Error = "side b holds " + st.Address + " on " + st.Device + ", which counts no tunnel traffic: the tunnel ends in a route, not a device"
			continue
		}
		c, cerr := sample.LinkCounters(ep.NL, st.Device)
		if cerr != nil {
			st.Error = cerr.Error()
		}
		sc.before[i] = c
	}
	return sc
}

// end reads the devices' counters again and returns what each counted
// since beginSpread.
func (sc *spreadCounters) end(ep *testbed.Endpoint) []result.SpreadTunnel {
	if sc == nil {
		return nil
	}
	for i := range sc.tunnels {
		st := &sc.tunnels[i]
		if st.Error != "" {
			continue
		}
		after, err := sample.LinkCounters(ep.NL, st.Device)
		if err != nil {
			st.Error = err.Error()
			continue
		}
		st.RxBytes, st.TxBytes = after.RxBytes-sc.before[i].RxBytes, after.TxBytes-sc.before[i].TxBytes
	}
	return sc.tunnels
}
