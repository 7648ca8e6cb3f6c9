package method

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// The tunnels dimension (scenario tunnels:, --tunnels; docs/scale.md):
// a cell sets up N tunnels between its two endpoints, every other
// dimension unchanged, and the load crosses one of them
// (MeasuredTunnel). What one tunnel is belongs to each method family
// (Scaler): a device with its own VNI, key or addresses, an FDB remote,
// a peer, a CHILD_SA, a rule. Env.Tunnels carries N to Setup.

// Scale says what one tunnel of a method is and how many it sets up.
type Scale struct {
	// Unit names one tunnel in the method's terms, singular: "VXLAN
	// device", "FDB remote", "peer", "CHILD_SA", "rule".
	Unit string
	// Max is the most tunnels the method sets up between two endpoints
	// with these options and family (1: one only).
	Max int
	// Why says what bounds Max, as a clause: "the IPv4 address plan
	// 198.19.128.0/17 holds 16384 /31 pairs", "openvpn carries one peer
	// per daemon".
	Why string
	// Cost is the estimated time to set up and tear down one tunnel, for
	// --dry-run's estimate of a sweep (a run records the real figures,
	// result.Scale); zero means DefaultTunnelCost.
	Cost time.Duration
	// Carries says every one of the N tunnels carries load as the
	// measured one does: its own overlay addresses on both sides, routed
	// through its own entry of the data path (a device per tunnel). It is
	// false where the other tunnels are fillers that only occupy the
	// lookup (filler peers, FDB remotes to unrouted addresses): the
	// groundwork of spreading K parallel streams over K tunnels
	// (SpreadTunnels, issue 41).
	Carries bool
}

// DefaultTunnelCost is the Cost of a Scale that gives none: a kernel
// tunnel device added and deleted through netlink, one request each, as
// measured here for the gre family (about 18 ms a device deleted one by
// one under load, docs/performance.md) with room for its addresses and
// routes.
const DefaultTunnelCost = 25 * time.Millisecond

// TunnelCost is s's Cost, or DefaultTunnelCost when it gives none.
func (s Scale) TunnelCost() time.Duration {
	if s.Cost > 0 {
		return s.Cost
	}
	return DefaultTunnelCost
}

// Scaler is implemented by a method that sets up more than one tunnel
// between the two endpoints (Env.Tunnels). A method without it sets up
// exactly one (ScaleOf).
type Scaler interface {
	// Scale says what one tunnel is and how many Setup creates at most,
	// for family and the method's options. It is pure: validation calls
	// it before anything is created.
	Scale(family string, opts Values) Scale
}

// Grower is implemented by a Scaler that can add one more tunnel to a
// running set-up, as a mesh gains a site: the reconf test calls Grow
// while traffic crosses the measured tunnel. Grow adds the tunnel of
// index env.Tunnels (the N+1st, ScaleOverlay's addresses) on both sides
// and says what it did, in one line that names no key. Teardown removes
// it with the others.
type Grower interface {
	Grow(ctx context.Context, env *Env) (how string, err error)
}

// ScaleOf is m's Scale for family with opts: its own (Scaler), or one
// tunnel.
func ScaleOf(m Method, family string, opts Values) Scale {
	if s, ok := m.(Scaler); ok {
		return s.Scale(family, opts)
	}
	return Scale{Unit: "tunnel", Max: 1, Why: m.Name() + " sets up one tunnel between two endpoints"}
}

// N is the number of tunnels Setup creates: Env.Tunnels, at least 1.
func (e *Env) N() int { return max(e.Tunnels, 1) }

// Measured is the index of the tunnel the load crosses (MeasuredTunnel).
func (e *Env) Measured() int { return MeasuredTunnel(e.N()) }

// MeasuredTunnel is the index, among n tunnels, of the one the load
// crosses: the middle one (n/2), so that its lookup is neither the
// first entry nor the last of whatever the method's data path searches.
// With n = 1 it is 0; with n = 2 it is 1.
func MeasuredTunnel(n int) int { return max(n, 1) / 2 }

// SpreadTunnels is the indexes, among n tunnels, of the k that k
// parallel streams spread over: k consecutive tunnels centred on the
// measured one (MeasuredTunnel), so that with k < n-1 neither the first
// entry nor the last is among them. k is clamped to 1..n.
func SpreadTunnels(n, k int) []int {
	n = max(n, 1)
	k = min(max(k, 1), n)
	from := min(max(MeasuredTunnel(n)-k/2, 0), n-k)
	idx := make([]int, k)
	for i := range idx {
		idx[i] = from + i
	}
	return idx
}

// The address plan of the tunnels dimension: the measured tunnel has the
// overlay addresses of a single tunnel (Overlay), so the load runs as it
// does at N = 1; tunnel i (i != the measured one) has a pair of its own,
// in blocks no single-tunnel method uses: IPv4 /31 pairs in
// 198.19.128.0/17, IPv6 /64s from 2001:2:0:8000::/49. Each carries no
// traffic but what a test sends to it (a ping across the first and the
// last tunnel).
var (
	ScaleBlock4 = netip.MustParsePrefix("198.19.128.0/17")
	ScaleBlock6 = netip.MustParsePrefix("2001:2:0:8000::/49")
)

// MaxScaleTunnels is the most tunnels the address plan holds per family:
// 16384 IPv4 /31 pairs, 32768 IPv6 /64s.
func MaxScaleTunnels(family string) int {
	if family == IPv6 {
		return 1 << 15
	}
	return 1 << 14
}

// ScaleWhy is the Why of a Scale bounded by the address plan alone.
func ScaleWhy(family string) string {
	if family == IPv6 {
		return fmt.Sprintf("the IPv6 address plan %s holds %d /64s", ScaleBlock6, MaxScaleTunnels(IPv6))
	}
	return fmt.Sprintf("the IPv4 address plan %s holds %d /31 pairs", ScaleBlock4, MaxScaleTunnels(IPv4))
}

// ScaleOverlay returns the overlay prefixes of sides a and b of tunnel i
// of env (0 <= i <= env.N(): index env.N() is the one Grow adds): the
// measured tunnel's are Overlay's, the others' come from the scale
// blocks. IPv4 pairs are /31s, IPv6 ones ::1 and ::2 in a /64.
func ScaleOverlay(family string, i, measured int) (a, b netip.Prefix) {
	if i == measured {
		return Overlay(family)
	}
	if family == IPv6 {
		s := ScaleBlock6.Addr().As16()
		s[6], s[7] = byte(0x80|i>>8), byte(i)
		s[15] = 1
		pa := netip.PrefixFrom(netip.AddrFrom16(s), 64)
		s[15] = 2
		return pa, netip.PrefixFrom(netip.AddrFrom16(s), 64)
	}
	base := binary.BigEndian.Uint32(ScaleBlock4.Addr().AsSlice()) + 2*uint32(i)
	var s [4]byte
	binary.BigEndian.PutUint32(s[:], base)
	pa := netip.PrefixFrom(netip.AddrFrom4(s), 31)
	binary.BigEndian.PutUint32(s[:], base+1)
	return pa, netip.PrefixFrom(netip.AddrFrom4(s), 31)
}

// Overlays returns ScaleOverlay for every tunnel of env, in index order.
func (e *Env) Overlays() (a, b []netip.Prefix) {
	n, m := e.N(), e.Measured()
	a, b = make([]netip.Prefix, n), make([]netip.Prefix, n)
	for i := range n {
		a[i], b[i] = ScaleOverlay(e.Family, i, m)
	}
	return a, b
}

// AddTimer records how long each tunnel's set-up took, for the per-tunnel
// percentiles of a scaled cell (Path.Adds). The zero value is ready; a
// nil *AddTimer records nothing.
type AddTimer struct {
	last time.Time
	adds []time.Duration
}

// Start marks the beginning of a run of adds.
func (t *AddTimer) Start() {
	if t != nil {
		t.last = time.Now()
	}
}

// Done records that one tunnel's add finished: the time since the
// previous Done (or Start).
func (t *AddTimer) Done() {
	if t == nil {
		return
	}
	now := time.Now()
	if t.last.IsZero() {
		t.last = now
	}
	t.adds = append(t.adds, now.Sub(t.last))
	t.last = now
}

// Adds are the recorded durations, in order.
func (t *AddTimer) Adds() []time.Duration {
	if t == nil {
		return nil
	}
	return t.adds
}
