package wireguard

// The tunnels dimension for WireGuard (method.Scaler, docs/scale.md):
// one tunnel is one peer of one device per side.
//
// A WireGuard device has one private key, so two devices cannot be N
// peers of each other: side b's device can know side a's device as one
// peer only. The set-up is therefore a hub's: side a's device holds N
// peers and side b's device its one real peer. Peer Measured() of side a
// is the real one (side b's key, the single tunnel's overlay addresses
// and preshared key); the other N-1 are fillers, each with a public key
// generated for the run (random, with no private key anywhere), an
// endpoint at an unused address of the benchmarking ranges
// (wgFillerBlock4, wgFillerBlock6) and as its allowed IP side b's
// address of its tunnel in the address plan (method.ScaleOverlay). No
// route leads to those addresses, so a filler sends nothing: no
// handshake is ever initiated toward its endpoint. What N costs is what
// a hub's peer table costs: the set-up of N peers, their memory, and the
// lookup of every packet's peer among N (allowed IPs on the way out,
// the receiver index on the way in), which is what the load through the
// measured peer meets.
//
// Peers are configured in batches (wgBatch peers to a request: one UAPI
// set for the userspace daemons, one wgctrl ConfigureDevice for the
// kernel), the first batch with the device's key and port as at N = 1;
// each peer's add is its batch's time divided by the peers in it
// (Path.Adds).

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// The filler peers' endpoints: filler i is at the block's address + i
// (+ i + 1 in IPv6, whose ::0 is the subnet's anycast address), in the
// benchmarking ranges (198.18.0.0/15, 2001:2::/48) and away from
// every address a testbed or another method uses there. 16384 IPv4
// addresses are as many as the address plan has tunnels; the IPv6 /64
// holds more than it.
var (
	wgFillerBlock4 = netip.MustParsePrefix("198.18.64.0/18")
	wgFillerBlock6 = netip.MustParsePrefix("2001:2:0:4000::/64")
)

// wgBatch is the number of peers configured in one request: enough that
// a request's own cost (a connection, an op's round trip to a remote
// host) is small beside its peers', few enough that the per-peer adds
// keep some resolution and a request ends well within the UAPI
// exchange's 10 s deadline on a busy machine.
const wgBatch = 256

// wgScale is the Scale of every WireGuard method: one tunnel is one
// peer, at most as many as the address plan holds. Each implementation
// takes more on one device: the kernel's MAX_PEERS_PER_DEVICE is 1 << 20
// and wireguard-go's MaxPeers 1 << 16, above the plan's 16384 and 32768;
// boringtun 0.7.1 has no limit of its own below 2^24 - 1 (its 24-bit
// peer index) and took 40,000 peers on one device here
// (docs/performance.md).
func wgScale(family string) method.Scale {
	// Cost: wireguard-go set 10,000 peers up in 4.0 to 5.3 s here.
	return method.Scale{Unit: "peer", Max: method.MaxScaleTunnels(family), Cost: 500 * time.Microsecond,
		Why: method.ScaleWhy(family) + ", a peer's allowed IP each"}
}

// wgFillerEndpoint is filler peer i's endpoint address in family.
func wgFillerEndpoint(family string, i int) netip.Addr {
	if family == method.IPv6 {
		s := wgFillerBlock6.Addr().As16()
		binary.BigEndian.PutUint32(s[12:], uint32(i)+1)
		return netip.AddrFrom16(s)
	}
	s := wgFillerBlock4.Addr().As4()
	binary.BigEndian.PutUint32(s[:], binary.BigEndian.Uint32(s[:])+uint32(i))
	return netip.AddrFrom4(s)
}

// wgFiller is the configuration of filler peer i of side a among
// measured: key is its public key (no private key exists), its endpoint
// wgFillerEndpoint at port, its allowed IP side b's address of tunnel i.
func wgFiller(family string, i, measured, port int, key wgtypes.Key) wgtypes.PeerConfig {
	_, b := method.ScaleOverlay(family, i, measured)
	return wgtypes.PeerConfig{
		PublicKey:         key,
		Endpoint:          &net.UDPAddr{IP: net.IP(wgFillerEndpoint(family, i).AsSlice()), Port: port},
		ReplaceAllowedIPs: true,
		AllowedIPs:        []net.IPNet{*testbed.PrefixNet(method.HostPrefix(b.Addr()))},
	}
}

// wgPeers is side a's peers of n tunnels in index order: real at index
// measured, fillers elsewhere (keys gives each its public key).
func wgPeers(family string, n, measured, port int, real wgtypes.PeerConfig, keys func() (wgtypes.Key, error)) ([]wgtypes.PeerConfig, error) {
	peers := make([]wgtypes.PeerConfig, 0, n)
	for i := range n {
		if i == measured {
			peers = append(peers, real)
			continue
		}
		k, err := keys()
		if err != nil {
			return nil, fmt.Errorf("generate the public key of peer %d: %w", i, err)
		}
		peers = append(peers, wgFiller(family, i, measured, port, k))
	}
	return peers, nil
}

// wgBatches splits cfg into requests of at most size peers: the first
// carries cfg's device settings (key, port, replace_peers), the others
// only peers. A cfg of size peers or fewer is itself.
func wgBatches(cfg wgtypes.Config, size int) []wgtypes.Config {
	if len(cfg.Peers) <= size {
		return []wgtypes.Config{cfg}
	}
	var out []wgtypes.Config
	first := cfg
	first.Peers = cfg.Peers[:size]
	out = append(out, first)
	for rest := cfg.Peers[size:]; len(rest) > 0; {
		k := min(size, len(rest))
		out = append(out, wgtypes.Config{Peers: rest[:k]})
		rest = rest[k:]
	}
	return out
}

// wgConfigure configures cfg on ctl in batches (wgBatches) and returns
// each peer's add: its batch's duration over the peers in it, in order.
func wgConfigure(ctl wgControl, cfg wgtypes.Config) ([]time.Duration, error) {
	adds := make([]time.Duration, 0, len(cfg.Peers))
	done := 0
	for _, b := range wgBatches(cfg, wgBatch) {
		start := time.Now()
		if err := ctl.configure(b); err != nil {
			if done > 0 {
				return adds, fmt.Errorf("peers %d to %d (of %d): %w", done, done+len(b.Peers)-1, len(cfg.Peers), err)
			}
			return adds, err
		}
		d := time.Since(start)
		for range b.Peers {
			adds = append(adds, d/time.Duration(len(b.Peers)))
		}
		done += len(b.Peers)
	}
	return adds, nil
}

// scaledAdds is Path.Adds of env's set-up: adds (side a's peers, then
// side b's) when env sets up more than one tunnel, nil otherwise.
func scaledAdds(env *method.Env, adds []time.Duration) []time.Duration {
	if env.N() == 1 {
		return nil
	}
	return adds
}

// wgGrow adds peer env.N() to side a's device (method.Grower): one more
// filler, as a hub gains a site; side b, which knows a as its one peer,
// is unchanged. It says what it did, naming no key.
func wgGrow(env *method.Env, name string, ctl wgControl) (string, error) {
	i := env.N()
	if i >= method.MaxScaleTunnels(env.Family) {
		return "", fmt.Errorf("grow %s: %d peers fill %s; no tunnel %d fits: lower tunnels", name, i, method.ScaleWhy(env.Family), i+1)
	}
	opts, err := method.ParseDeclared(name, []method.Option{method.WGPortOption}, env.Options)
	if err != nil {
		return "", err
	}
	k, err := wgtypes.GenerateKey()
	if err != nil {
		return "", fmt.Errorf("grow %s: generate a public key: %w", name, err)
	}
	p := wgFiller(env.Family, i, env.Measured(), opts.Int("port"), k)
	how := fmt.Sprintf("add peer %d on side a's %s (allowed IP %s, endpoint %s)", i, wgDevName(env, env.A), p.AllowedIPs[0].String(), p.Endpoint)
	if err := ctl.configure(wgtypes.Config{Peers: []wgtypes.PeerConfig{p}}); err != nil {
		return how, fmt.Errorf("a: %s: %w", how, err)
	}
	return how, nil
}

// Scale: one tunnel is one peer (see wgScale).
func (WireGuard) Scale(family string, _ method.Values) method.Scale { return wgScale(family) }

// Scale: one tunnel is one peer (see wgScale).
func (*WireGuardGo) Scale(family string, _ method.Values) method.Scale { return wgScale(family) }

// Scale: one tunnel is one peer (see wgScale).
func (*BoringTun) Scale(family string, _ method.Values) method.Scale { return wgScale(family) }

// Grow adds one more peer to side a's device (method.Grower; wgGrow).
func (WireGuard) Grow(_ context.Context, env *method.Env) (string, error) {
	return wgGrow(env, "wireguard", wgKernel{ep: env.A, dev: wgDevName(env, env.A)})
}

// Grow adds one more peer to side a's daemon (method.Grower; wgGrow).
func (m *WireGuardGo) Grow(_ context.Context, env *method.Env) (string, error) {
	return m.u.grow(env)
}

// Grow adds one more peer to side a's daemon (method.Grower; wgGrow).
func (m *BoringTun) Grow(_ context.Context, env *method.Env) (string, error) { return m.u.grow(env) }

// grow adds one more peer to side a's daemon (wgGrow).
func (u *wgUserspace) grow(env *method.Env) (string, error) {
	dir := filepath.Join(method.SideRoot(env, env.A), u.d.method+"-"+env.A.Side)
	s := &wgSide{ep: env.A, dev: wgDevName(env, env.A), dir: dir}
	return wgGrow(env, u.d.method, wgUAPI{ep: env.A, sock: wgSocket(s)})
}
