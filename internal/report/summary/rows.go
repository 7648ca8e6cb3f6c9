package summary

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// BaselineKey is what a row shares with its native baseline: every
// parameter except the overlay MTU (which depends on the method's overhead)
// and method-specific options.
type BaselineKey struct {
	Family      string
	UnderlayMTU int
	Offloads    bool
	Streams     int
	Duration    float64
	Omit        float64
	Latency     float64
	Pin         bool
	Direction   string
	MSS         int
	WAN         string
	OffloadSet  string
	// SiteA and SiteB: on an ssh testbed a method compares with native
	// between the same two hosts.
	SiteA, SiteB string
	// CongestionControl: a method compares with native under the same
	// algorithm.
	CongestionControl string
	// Tunnels is the tunnels dimension (result.Params.Tunnels), 0 for one
	// tunnel: rows with N tunnels group, head and draw apart from those
	// with one, but % native compares them with native at one tunnel
	// (NativeKey): native sets up no tunnel, so it has no N.
	Tunnels int
	// Spread: the parallel test's processes each crossed a tunnel of
	// their own (result.Params.Spread); % native compares with native,
	// which spreads nothing, without it (NativeKey).
	Spread bool
}

// BaselineOf is the baseline key of a row with parameters p.
func BaselineOf(p result.Params) BaselineKey {
	return BaselineKey{p.Family, p.UnderlayMTU, p.Offloads, p.Streams, p.Duration, p.Omit, p.Latency, p.Pin, p.Direction, p.MSS, p.WAN.Label(), p.OffloadSet, p.SiteA, p.SiteB, p.CongestionControl, TunnelCount(p), p.Spread}
}

// TunnelCount is a cell's tunnels dimension as the baseline key holds it:
// 0 for one tunnel (Params.Tunnels 0 or 1), else the count.
func TunnelCount(p result.Params) int {
	if p.Tunnels > 1 {
		return p.Tunnels
	}
	return 0
}

// NativeKey is the key of the native row a row with parameters p
// compares with for % native: its baseline key at one tunnel. A row with
// 100 tunnels compares with native under the same other parameters.
func NativeKey(p result.Params) BaselineKey {
	k := BaselineOf(p)
	k.Tunnels, k.Spread = 0, false
	return k
}

// sortRows groups rows by baseline key in order of first appearance and
// puts native first within each group. The sort is stable.
func sortRows(rows []Summary) {
	rank := map[BaselineKey]int{}
	for _, r := range rows {
		if _, ok := rank[BaselineOf(r.Params)]; !ok {
			rank[BaselineOf(r.Params)] = len(rank)
		}
	}
	slices.SortStableFunc(rows, func(a, b Summary) int {
		if c := cmp.Compare(rank[BaselineOf(a.Params)], rank[BaselineOf(b.Params)]); c != 0 {
			return c
		}
		an, bn := a.Method == NativeMethod, b.Method == NativeMethod
		switch {
		case an && !bn:
			return -1
		case bn && !an:
			return 1
		}
		return 0
	})
}

// labelRows names each row by its method, adding the implementation where
// one method has several in the run.
func labelRows(rows []Summary) {
	impls := map[string]map[string]bool{}
	for _, r := range rows {
		if impls[r.Method] == nil {
			impls[r.Method] = map[string]bool{}
		}
		impls[r.Method][r.Implementation] = true
	}
	for i := range rows {
		rows[i].Label = rows[i].Method
		if len(impls[rows[i].Method]) > 1 && rows[i].Implementation != "" {
			rows[i].Label = fmt.Sprintf("%s/%s", rows[i].Method, rows[i].Implementation)
		}
		rows[i].Label = WithDatapath(rows[i].Label, rows[i].Datapath)
	}
}

// WithDatapath adds a data path to a method's name: "ovs-geneve
// (netdev)"; a name without one stays as it is.
func WithDatapath(name, datapath string) string {
	if datapath == "" {
		return name
	}
	return name + " (" + datapath + ")"
}

// CellDatapath is where a cell's packets were processed: the recorded
// Meta.Datapath, or for records older than it, what the method's Variant
// says (ovs-*: "netdev" or "system"; ipsec: kernel xfrm or
// kernel-libipsec; kernel wireguard; openvpn's userspace data channel).
func CellDatapath(c result.Cell) string {
	if c.Meta.Datapath != "" {
		return c.Meta.Datapath
	}
	v := c.Meta.Variant
	switch {
	case v == "":
		return ""
	case strings.HasPrefix(c.Method, "ovs-"):
		switch v {
		case "netdev":
			return result.DatapathNetdev
		case "system":
			return result.DatapathKernel
		}
	case c.Method == "ipsec" || c.Method == "ipsec-ecmp":
		switch {
		case strings.HasPrefix(v, "kernel-libipsec"):
			return result.DatapathLibipsec
		case strings.HasPrefix(v, "kernel xfrm"):
			return result.DatapathKernel
		}
	case c.Method == "wireguard" && v == "kernel":
		return result.DatapathKernel
	case c.Method == "openvpn" && strings.Contains(v, "userspace data channel"):
		return result.DatapathUserspace
	}
	return ""
}

// setPercentNative fills PercentNative from each row's native baseline.
func setPercentNative(rows []Summary) {
	native := map[BaselineKey]float64{}
	for _, r := range rows {
		k := BaselineOf(r.Params)
		if _, dup := native[k]; dup || k.Tunnels != 0 {
			continue // the first native row at one tunnel is the baseline
		}
		if r.Method == NativeMethod && r.Throughput.N > 0 && r.Throughput.Mean > 0 {
			native[k] = r.Throughput.Mean
		}
	}
	for i := range rows {
		base, ok := native[NativeKey(rows[i].Params)]
		if !ok || rows[i].Throughput.N == 0 {
			continue
		}
		p := Round6(100 * rows[i].Throughput.Mean / base)
		rows[i].PercentNative = &p
	}
}

// Slug names a parameter set in figure ids: stable, file-name safe.
// Every parameter a run may vary is in it, so that two figures of one run
// never share an id (nor the files named after it).
func (k BaselineKey) Slug() string {
	offloads := OnOff(k.Offloads)
	switch {
	case k.OffloadSet != "" && k.Offloads:
		offloads = SlugLabel(k.OffloadSet)
	case k.OffloadSet != "":
		offloads += "-" + SlugLabel(k.OffloadSet)
	}
	s := fmt.Sprintf("%s-mtu%d-offloads-%s-p%d", k.Family, k.UnderlayMTU, offloads, k.Streams)
	if k.Pin {
		s += "-pin"
	}
	if k.CongestionControl != "" {
		s += "-cc-" + k.CongestionControl
	}
	if k.MSS > 0 {
		s += fmt.Sprintf("-mss%d", k.MSS)
	}
	if k.Direction != "" && k.Direction != "forward" {
		s += "-" + SlugLabel(k.Direction)
	}
	if k.WAN != "" {
		s += "-wan-" + SlugLabel(k.WAN)
	}
	if k.SiteA != "" || k.SiteB != "" {
		s += "-" + SlugLabel(k.SiteA) + "-to-" + SlugLabel(k.SiteB)
	}
	if k.Tunnels > 1 {
		s += fmt.Sprintf("-t%d", k.Tunnels)
	}
	return s
}

// SlugLabel makes a row label file-name safe.
func SlugLabel(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, s)
}

// GroupSlug names a streams group in figure ids.
func GroupSlug(p result.Params) string {
	k := BaselineOf(p)
	k.Streams = 0
	return strings.Replace(k.Slug(), "-p0", "", 1)
}
