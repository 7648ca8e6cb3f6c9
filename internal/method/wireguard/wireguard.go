package wireguard

// Code shared by the WireGuard methods: the kernel device (wireguard), and
// the userspace daemons wireguard-go and boringtun.
//
// Every run generates fresh keys in Go: one private key per side and one
// preshared key. Both sides get the same configuration shape (wgtypes.Config):
// its private key, the listen port, and the other side as the only peer,
// reached at its underlay address and allowed only its overlay address
// (with the tunnels dimension, side a's device holds N peers: scale.go).
// The kernel device is configured through wgctrl (generic netlink, opened
// inside the side's namespace). The userspace daemons are configured through
// the cross-platform userspace API (the text protocol of
// https://www.wireguard.com/xplatform/) on their UNIX socket: each daemon
// runs in a private mount namespace whose /run is the side's directory, so
// its socket is <side dir>/run/wireguard/<dev>.sock and nothing is created
// in the host's /var/run/wireguard, which is shared by every namespace.
// wgctrl cannot be pointed at such a socket (it only lists
// /var/run/wireguard), hence the small UAPI client here; it takes the same
// wgtypes.Config.
//
// Key material lives only in memory and in 0600 files in the side
// directories (private.key, preshared.key, in wg(8)'s base64 format), which
// Teardown removes. Devices read back from either backend have their
// private and preshared keys cleared before anything else sees them.

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// WireGuardPort is the default UDP listen port of every WireGuard method
// (option "port").
const WireGuardPort = 51820

// wgHandshakeTimeout bounds the wait for the first completed handshake
// (a variable for tests).
const wgHandshakeTimeout = 10 * time.Second

// orDefault is a method value's handshake wait: wgHandshakeTimeout unless
// a test set another.
func orDefault(d time.Duration) time.Duration {
	if d == 0 {
		return wgHandshakeTimeout
	}
	return d
}

// wgOverhead is the outer IP header (20 for IPv4, 40 for IPv6), UDP (8),
// the WireGuard transport data header (16: type 1, reserved 3, receiver
// index 4, counter 8) and the Poly1305 authentication tag (16): 60 bytes
// over IPv4, 80 over IPv6. The plaintext is padded to a multiple of 16
// bytes but never beyond the device MTU, so a full-MTU packet carries no
// padding and the overhead holds at the MTU.
func wgOverhead(family string) int {
	if family == method.IPv6 {
		return 40 + 8 + 16 + 16
	}
	return 20 + 8 + 16 + 16
}

// wgDevName is the WireGuard device of side ep: distinct per side, since
// userspace control sockets are named after the device.
func wgDevName(env *method.Env, ep *testbed.Endpoint) string { return env.Prefix + "-wg" + ep.Side }

// wgSide is the configuration of one side.
type wgSide struct {
	ep   *testbed.Endpoint
	dev  string
	dir  string       // private side directory (0700)
	addr netip.Prefix // overlay address on the device
	cfg  wgtypes.Config
	// peer is the public key of the real peer (the other side), among
	// the fillers on side a of a scaled set-up (scale.go).
	peer wgtypes.Key
}

// wgPlan generates fresh keys, writes them 0600 into the side directories
// <env.Dir>/<method>-<side>, and returns both sides' configuration. With
// env.N() > 1, side a's device holds the filler peers too (scale.go).
func wgPlan(env *method.Env, name string) ([2]*wgSide, error) {
	var sides [2]*wgSide
	opts, err := method.ParseDeclared(name, []method.Option{method.WGPortOption}, env.Options)
	if err != nil {
		return sides, err
	}
	// Validation refuses more tunnels first; this guards a direct call.
	if s := wgScale(env.Family); env.N() > s.Max {
		return sides, fmt.Errorf("%s: %d tunnels: at most %d (one tunnel is one %s; %s)", name, env.N(), s.Max, s.Unit, s.Why)
	}
	port := opts.Int("port")
	psk, err := wgtypes.GenerateKey()
	if err != nil {
		return sides, fmt.Errorf("generate preshared key: %w", err)
	}
	var priv [2]wgtypes.Key
	for i := range priv {
		if priv[i], err = wgtypes.GeneratePrivateKey(); err != nil {
			return sides, fmt.Errorf("%s: generate private key: %w", env.Endpoints()[i].Side, err)
		}
	}
	oa, ob := method.Overlay(env.Family)
	overlay := [2]netip.Prefix{oa, ob}
	for i, ep := range env.Endpoints() {
		peer := env.Peer(ep)
		dir, err := method.SideDir(env, name, ep)
		if err != nil {
			return sides, err
		}
		if err := method.WriteSecret(ep, filepath.Join(dir, "private.key"), []byte(priv[i].String()+"\n")); err != nil {
			return sides, fmt.Errorf("%s: %w", ep.Side, err)
		}
		if err := method.WriteSecret(ep, filepath.Join(dir, "preshared.key"), []byte(psk.String()+"\n")); err != nil {
			return sides, fmt.Errorf("%s: %w", ep.Side, err)
		}
		peerPSK := psk
		listen := port
		sides[i] = &wgSide{
			ep:   ep,
			dev:  wgDevName(env, ep),
			dir:  dir,
			addr: overlay[i],
			peer: priv[1-i].PublicKey(),
			cfg: wgtypes.Config{
				PrivateKey:   &priv[i],
				ListenPort:   &listen,
				ReplacePeers: true,
				Peers: []wgtypes.PeerConfig{{
					PublicKey:         priv[1-i].PublicKey(),
					PresharedKey:      &peerPSK,
					Endpoint:          &net.UDPAddr{IP: net.IP(peer.Addr(env.Family).AsSlice()), Port: port},
					ReplaceAllowedIPs: true,
					AllowedIPs:        []net.IPNet{*testbed.PrefixNet(method.HostPrefix(overlay[1-i].Addr()))},
				}},
			},
		}
	}
	if n := env.N(); n > 1 {
		a := &sides[0].cfg
		if a.Peers, err = wgPeers(env.Family, n, env.Measured(), port, a.Peers[0], wgtypes.GenerateKey); err != nil {
			return sides, fmt.Errorf("%s: %w", env.A.Side, err)
		}
	}
	return sides, nil
}

// wgControl configures and reads one WireGuard device.
type wgControl interface {
	configure(cfg wgtypes.Config) error
	// device returns the device's state with its private and preshared
	// keys cleared.
	device() (*wgtypes.Device, error)
}

// wgKernel controls a kernel WireGuard device through wgctrl (generic
// netlink), opened inside the endpoint's namespace.
type wgKernel struct {
	ep  *testbed.Endpoint
	dev string
}

type wgConfigureArgs struct {
	Dev string
	Cfg wgtypes.Config
}

// The wgctrl calls run where the endpoint is (ops), inside its namespace.
var (
	opWGConfigure = testbed.NewOp("wireguard.configure", func(_ context.Context, ep *testbed.Endpoint, a wgConfigureArgs) (struct{}, error) {
		return struct{}{}, ep.Do(func() error {
			c, err := wgctrl.New()
			if err != nil {
				return fmt.Errorf("open wgctrl: %w", err)
			}
			defer c.Close()
			return c.ConfigureDevice(a.Dev, a.Cfg)
		})
	})
	opWGDevice = testbed.NewOp("wireguard.device", func(_ context.Context, ep *testbed.Endpoint, dev string) (*wgtypes.Device, error) {
		var d *wgtypes.Device
		err := ep.Do(func() error {
			c, err := wgctrl.New()
			if err != nil {
				return fmt.Errorf("open wgctrl: %w", err)
			}
			defer c.Close()
			d, err = c.Device(dev)
			return err
		})
		if err != nil {
			return nil, err
		}
		return wgScrub(d), nil
	})
	opUAPIExchange = testbed.NewOp("wireguard.uapi", func(_ context.Context, _ *testbed.Endpoint, a uapiArgs) ([]string, error) {
		return uapiExchange(a.Sock, a.Req)
	})
	opTUNCreate = testbed.NewOp("wireguard.tun", func(_ context.Context, ep *testbed.Endpoint, dev string) (struct{}, error) {
		return struct{}{}, ep.Do(func() error { return createTUN(dev) })
	})
	opUDPKick = testbed.NewOp("udp.kick", func(_ context.Context, ep *testbed.Endpoint, to netip.AddrPort) (struct{}, error) {
		return struct{}{}, ep.Do(func() error {
			c, err := net.Dial("udp", to.String())
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte("tunbench wireguard handshake trigger"))
			return err
		})
	})
)

type uapiArgs struct{ Sock, Req string }

func (k wgKernel) configure(cfg wgtypes.Config) error {
	_, err := opWGConfigure.Call(context.Background(), k.ep, wgConfigureArgs{Dev: k.dev, Cfg: cfg})
	return err
}

func (k wgKernel) device() (*wgtypes.Device, error) {
	return opWGDevice.Call(context.Background(), k.ep, k.dev)
}

// wgScrub clears the key material of d.
func wgScrub(d *wgtypes.Device) *wgtypes.Device {
	d.PrivateKey = wgtypes.Key{}
	for i := range d.Peers {
		d.Peers[i].PresharedKey = wgtypes.Key{}
	}
	return d
}

// wgUAPI controls a userspace WireGuard daemon through its UNIX socket,
// speaking the cross-platform userspace API.
type wgUAPI struct {
	ep   *testbed.Endpoint
	sock string
}

// exchange sends one request on the endpoint's host and returns the
// response lines before the errno line.
func (u wgUAPI) exchange(req string) ([]string, error) {
	return opUAPIExchange.Call(context.Background(), u.ep, uapiArgs{Sock: u.sock, Req: req})
}

// uapiExchange sends one request and returns the response lines before
// the errno line; a non-zero errno is an error (never quoting the
// request, which may carry keys). A socket path longer than a sockaddr_un
// holds is reached through /proc/self/fd of its directory (DialUnix).
func uapiExchange(sock, req string) ([]string, error) {
	conn, err := method.DialUnix(sock)
	if err != nil {
		return nil, fmt.Errorf("uapi: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, fmt.Errorf("uapi: send request: %w", err)
	}
	return readUAPIResponse(conn)
}

// readUAPIResponse reads key=value lines up to "errno=N" and the blank
// line after it.
func readUAPIResponse(r io.Reader) ([]string, error) {
	var lines []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "errno="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("uapi: malformed errno line %q", line)
			}
			if n != 0 {
				return nil, fmt.Errorf("uapi: daemon answered errno=%d (%w)", n, unix.Errno(uint(max(n, -n))))
			}
			return lines, nil
		}
		if line == "" {
			continue
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("uapi: read response: %w", err)
	}
	return nil, errors.New("uapi: response ended without an errno line")
}

func (u wgUAPI) configure(cfg wgtypes.Config) error {
	_, err := u.exchange(uapiSet(cfg))
	return err
}

func (u wgUAPI) device() (*wgtypes.Device, error) {
	lines, err := u.exchange("get=1\n\n")
	if err != nil {
		return nil, err
	}
	d, err := parseUAPIGet(lines)
	if err != nil {
		return nil, err
	}
	d.Name = strings.TrimSuffix(filepath.Base(u.sock), ".sock")
	d.Type = wgtypes.Userspace
	return d, nil
}

// uapiSet renders cfg as a UAPI set request. It carries key material:
// never log or quote it.
func uapiSet(cfg wgtypes.Config) string {
	var b strings.Builder
	b.WriteString("set=1\n")
	if cfg.PrivateKey != nil {
		fmt.Fprintf(&b, "private_key=%s\n", hex.EncodeToString(cfg.PrivateKey[:]))
	}
	if cfg.ListenPort != nil {
		fmt.Fprintf(&b, "listen_port=%d\n", *cfg.ListenPort)
	}
	if cfg.FirewallMark != nil {
		fmt.Fprintf(&b, "fwmark=%d\n", *cfg.FirewallMark)
	}
	if cfg.ReplacePeers {
		b.WriteString("replace_peers=true\n")
	}
	for _, p := range cfg.Peers {
		fmt.Fprintf(&b, "public_key=%s\n", hex.EncodeToString(p.PublicKey[:]))
		if p.Remove {
			b.WriteString("remove=true\n")
		}
		if p.UpdateOnly {
			b.WriteString("update_only=true\n")
		}
		if p.PresharedKey != nil {
			fmt.Fprintf(&b, "preshared_key=%s\n", hex.EncodeToString(p.PresharedKey[:]))
		}
		if p.Endpoint != nil {
			fmt.Fprintf(&b, "endpoint=%s\n", p.Endpoint)
		}
		if p.PersistentKeepaliveInterval != nil {
			fmt.Fprintf(&b, "persistent_keepalive_interval=%d\n", int(p.PersistentKeepaliveInterval.Seconds()))
		}
		if p.ReplaceAllowedIPs {
			b.WriteString("replace_allowed_ips=true\n")
		}
		for _, ip := range p.AllowedIPs {
			fmt.Fprintf(&b, "allowed_ip=%s\n", ip.String())
		}
	}
	b.WriteString("\n")
	return b.String()
}

// parseUAPIGet parses the key=value lines of a UAPI get response (without
// the errno line). Private and preshared keys are skipped, never stored;
// so are keys it does not know. Errors quote keys and line numbers, never
// values. boringtun 0.7 reports the time since the last handshake in
// last_handshake_time_*, not the time of day, so LastHandshakeTime is only
// meaningful as zero (none yet) or not.
func parseUAPIGet(lines []string) (*wgtypes.Device, error) {
	d := &wgtypes.Device{}
	var peer *wgtypes.Peer
	var hsSec, hsNsec int64
	flush := func() {
		if peer == nil {
			return
		}
		if hsSec != 0 || hsNsec != 0 {
			peer.LastHandshakeTime = time.Unix(hsSec, hsNsec)
		}
		d.Peers = append(d.Peers, *peer)
		peer, hsSec, hsNsec = nil, 0, 0
	}
	for i, line := range lines {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("uapi get: line %d: no '='", i+1)
		}
		bad := func(err error) error { return fmt.Errorf("uapi get: line %d: bad %s: %w", i+1, k, valueErr(err)) }
		var err error
		switch k {
		case "private_key", "preshared_key":
			// Secret: not kept.
		case "public_key":
			flush()
			peer = &wgtypes.Peer{}
			var key []byte
			if key, err = hex.DecodeString(v); err == nil {
				peer.PublicKey, err = wgtypes.NewKey(key)
			}
		case "own_public_key": // boringtun
			var key []byte
			if key, err = hex.DecodeString(v); err == nil {
				d.PublicKey, err = wgtypes.NewKey(key)
			}
		case "listen_port":
			d.ListenPort, err = strconv.Atoi(v)
		case "fwmark":
			d.FirewallMark, err = strconv.Atoi(v)
		default:
			if peer == nil {
				continue // a device-level key we do not use
			}
			switch k {
			case "endpoint":
				var ap netip.AddrPort
				if ap, err = netip.ParseAddrPort(v); err == nil {
					peer.Endpoint = net.UDPAddrFromAddrPort(ap)
				}
			case "allowed_ip":
				var p netip.Prefix
				if p, err = netip.ParsePrefix(v); err == nil {
					peer.AllowedIPs = append(peer.AllowedIPs, *testbed.PrefixNet(p))
				}
			case "last_handshake_time_sec":
				hsSec, err = strconv.ParseInt(v, 10, 64)
			case "last_handshake_time_nsec":
				hsNsec, err = strconv.ParseInt(v, 10, 64)
			case "rx_bytes":
				peer.ReceiveBytes, err = strconv.ParseInt(v, 10, 64)
			case "tx_bytes":
				peer.TransmitBytes, err = strconv.ParseInt(v, 10, 64)
			case "persistent_keepalive_interval":
				var s int
				s, err = strconv.Atoi(v)
				peer.PersistentKeepaliveInterval = time.Duration(s) * time.Second
			case "protocol_version":
				peer.ProtocolVersion, err = strconv.Atoi(v)
			}
			// Unknown keys are skipped: daemons add their own.
		}
		if err != nil {
			return nil, bad(err)
		}
	}
	flush()
	return d, nil
}

// wgLinkUp sets the MTU and overlay address of an existing device and
// brings it up.
func wgLinkUp(ep *testbed.Endpoint, dev string, mtu int, addr netip.Prefix) error {
	link, err := ep.NL.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("%s: find %s: %w", ep.Side, dev, err)
	}
	if err := ep.NL.LinkSetMTU(link, mtu); err != nil {
		return fmt.Errorf("%s: set mtu %d on %s: %w", ep.Side, mtu, dev, err)
	}
	if err := method.AddAddr(ep, link, addr); err != nil {
		return err
	}
	if err := ep.NL.LinkSetUp(link); err != nil {
		return fmt.Errorf("%s: set %s up: %w", ep.Side, dev, err)
	}
	return nil
}

// tunFlags are the flags boringtun opens its TUN device with (IFF_TUN,
// IFF_NO_PI, IFF_MULTI_QUEUE): a persistent device it attaches to must
// have been created multi-queue like this, or its TUNSETIFF fails.
const tunFlags = unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_MULTI_QUEUE

// createTUN creates the persistent TUN device dev, with tunFlags, in the
// namespace of the calling thread (the namespace is the one /dev/net/tun
// is opened in), and closes it again: the device stays, with no queue,
// until a daemon attaches to it or it is deleted. A device of that name
// that exists already is an error (IFF_TUN_EXCL).
func createTUN(dev string) error {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("create tun device %s: open /dev/net/tun: %w", dev, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(dev)
	if err != nil {
		return fmt.Errorf("create tun device %s: %w", dev, err)
	}
	ifr.SetUint16(tunFlags | unix.IFF_TUN_EXCL)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		return fmt.Errorf("create tun device %s: TUNSETIFF: %w", dev, err)
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETPERSIST, 1); err != nil {
		return fmt.Errorf("create tun device %s: TUNSETPERSIST: %w", dev, err)
	}
	return nil
}

// wgCreateTUN creates side s's TUN device before its daemon starts
// (wgDaemon.tunFirst).
func wgCreateTUN(s *wgSide) error {
	if _, err := opTUNCreate.Call(context.Background(), s.ep, s.dev); err != nil {
		return fmt.Errorf("%s: %w", s.ep.Side, err)
	}
	return nil
}

// wgLinkExists reports whether dev exists in ep's namespace.
func wgLinkExists(ep *testbed.Endpoint, dev string) (bool, error) {
	_, err := ep.NL.LinkByName(dev)
	if err == nil {
		return true, nil
	}
	if testbed.IsLinkNotFound(err) {
		return false, nil
	}
	return false, fmt.Errorf("%s: find %s: %w", ep.Side, dev, err)
}

// wgKick sends one UDP datagram from side's namespace to the peer's
// overlay address (discard port), which makes WireGuard initiate a
// handshake.
func wgKick(from *wgSide, to netip.Addr) error {
	if _, err := opUDPKick.Call(context.Background(), from.ep, netip.AddrPortFrom(to, 9)); err != nil {
		return fmt.Errorf("%s: send handshake trigger to %s: %w", from.ep.Side, to, err)
	}
	return nil
}

// wgRealPeer is the peer of d with public key key (the other side), or
// nil. A side's device has that one peer but on side a of a scaled
// set-up, which has fillers too (scale.go).
func wgRealPeer(d *wgtypes.Device, key wgtypes.Key) *wgtypes.Peer {
	if d == nil {
		return nil
	}
	for i := range d.Peers {
		if d.Peers[i].PublicKey == key {
			return &d.Peers[i]
		}
	}
	return nil
}

// wgHandshakeState describes a side's peer with public key key for error
// messages.
func wgHandshakeState(d *wgtypes.Device, key wgtypes.Key) string {
	p := wgRealPeer(d, key)
	if p == nil {
		return "no peer configured"
	}
	hs := "never"
	if !p.LastHandshakeTime.IsZero() {
		hs = p.LastHandshakeTime.Format(time.RFC3339)
	}
	return fmt.Sprintf("latest handshake %s, received %d B, sent %d B", hs, p.ReceiveBytes, p.TransmitBytes)
}

// wgWaitHandshake makes side a initiate a handshake with b and waits until
// both sides report one. On timeout the error names each side without a
// handshake, with its peer counters; fail adds a side's daemon log. A
// side a with many peers (scale.go) is read only once b has its
// handshake, which comes first: reading N peers every 20 ms would slow
// the daemon it waits for.
func wgWaitHandshake(ctx context.Context, sides [2]*wgSide, ctl [2]wgControl, timeout time.Duration, fail func(i int, what string) error) error {
	done := [2]bool{}
	var last [2]*wgtypes.Device
	var lastErr [2]error
	nextKick := time.Time{}
	var kickErr error
	err := method.WaitFor(ctx, timeout, "wireguard handshake", func() (bool, error) {
		if time.Now().After(nextKick) {
			kickErr = wgKick(sides[0], sides[1].addr.Addr())
			nextKick = time.Now().Add(time.Second)
		}
		for _, i := range []int{1, 0} {
			if done[i] || (i == 0 && !done[1] && len(sides[0].cfg.Peers) > 1) {
				continue
			}
			d, err := ctl[i].device()
			last[i], lastErr[i] = d, err
			if err == nil && wgHandshook(d, sides[i].peer) {
				done[i] = true
			}
		}
		return done[0] && done[1], nil
	})
	if err == nil {
		return nil
	}
	var errs []error
	for i, s := range sides {
		if done[i] {
			continue
		}
		peer := sides[1-i].ep.Side
		what := fmt.Sprintf("no wireguard handshake on %s with %s within %s", s.dev, peer, timeout)
		if last[i] == nil && lastErr[i] == nil {
			last[i], lastErr[i] = ctl[i].device()
		}
		if lastErr[i] != nil {
			what += fmt.Sprintf(" (reading %s: %v)", s.dev, lastErr[i])
		} else {
			what += " (" + wgHandshakeState(last[i], s.peer) + ")"
		}
		if i == 0 && kickErr != nil {
			what += fmt.Sprintf(" (%v)", kickErr)
		}
		errs = append(errs, fail(i, what))
	}
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// wgHandshook reports whether d's peer with public key key has had a
// handshake.
func wgHandshook(d *wgtypes.Device, key wgtypes.Key) bool {
	p := wgRealPeer(d, key)
	return p != nil && !p.LastHandshakeTime.IsZero()
}

// errMalformed stands for a parse error whose message would quote the
// value: the parsed outputs carry keys, which must not reach errors.
var errMalformed = errors.New("malformed value")

// valueErr strips the value from a parse error.
func valueErr(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return errMalformed
}

// WGDump is the output of "wg show DEV dump" without its secrets: the
// private key and the preshared keys are not kept.
type WGDump struct {
	PublicKey  string
	ListenPort int
	// FirewallMark is 0 when wg prints "off".
	FirewallMark uint32
	Peers        []WGDumpPeer
}

// WGDumpPeer is one peer line of "wg show DEV dump".
type WGDumpPeer struct {
	PublicKey       string
	HasPresharedKey bool
	// Endpoint is "" when wg prints "(none)".
	Endpoint   string
	AllowedIPs []netip.Prefix
	// LatestHandshake is zero when there has been none.
	LatestHandshake time.Time
	RxBytes         int64
	TxBytes         int64
	// PersistentKeepalive is 0 when off.
	PersistentKeepalive time.Duration
}

// ParseWGDump parses the tab-separated output of "wg show DEV dump": a
// line "private-key public-key listen-port fwmark" for the device, then
// one line "public-key preshared-key endpoint allowed-ips
// latest-handshake rx tx persistent-keepalive" per peer. Errors name the
// line and field, never quote a value (the output carries keys).
func ParseWGDump(out []byte) (*WGDump, error) {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return nil, errors.New("wg dump: empty output")
	}
	f := strings.Split(lines[0], "\t")
	if len(f) != 4 {
		return nil, fmt.Errorf("wg dump: line 1: want 4 tab-separated fields, got %d", len(f))
	}
	d := &WGDump{PublicKey: f[1]}
	var err error
	if d.ListenPort, err = strconv.Atoi(f[2]); err != nil {
		return nil, fmt.Errorf("wg dump: line 1: bad listen port: %w", valueErr(err))
	}
	if f[3] != "off" {
		m, err := strconv.ParseUint(f[3], 0, 32)
		if err != nil {
			return nil, fmt.Errorf("wg dump: line 1: bad fwmark: %w", valueErr(err))
		}
		d.FirewallMark = uint32(m)
	}
	for n, line := range lines[1:] {
		f := strings.Split(line, "\t")
		if len(f) != 8 {
			return nil, fmt.Errorf("wg dump: line %d: want 8 tab-separated fields, got %d", n+2, len(f))
		}
		bad := func(what string, err error) error {
			return fmt.Errorf("wg dump: line %d: bad %s: %w", n+2, what, valueErr(err))
		}
		p := WGDumpPeer{PublicKey: f[0], HasPresharedKey: f[1] != "(none)"}
		if f[2] != "(none)" {
			if _, err := netip.ParseAddrPort(f[2]); err != nil {
				return nil, bad("endpoint", err)
			}
			p.Endpoint = f[2]
		}
		if f[3] != "(none)" {
			for _, s := range strings.Split(f[3], ",") {
				pfx, err := netip.ParsePrefix(s)
				if err != nil {
					return nil, bad("allowed ips", err)
				}
				p.AllowedIPs = append(p.AllowedIPs, pfx)
			}
		}
		hs, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			return nil, bad("latest handshake", err)
		}
		if hs != 0 {
			p.LatestHandshake = time.Unix(hs, 0)
		}
		if p.RxBytes, err = strconv.ParseInt(f[5], 10, 64); err != nil {
			return nil, bad("transfer rx", err)
		}
		if p.TxBytes, err = strconv.ParseInt(f[6], 10, 64); err != nil {
			return nil, bad("transfer tx", err)
		}
		if f[7] != "off" {
			s, err := strconv.Atoi(f[7])
			if err != nil {
				return nil, bad("persistent keepalive", err)
			}
			p.PersistentKeepalive = time.Duration(s) * time.Second
		}
		d.Peers = append(d.Peers, p)
	}
	return d, nil
}

// WireGuardShow runs "wg show DEV dump" on side ep and parses it. For a
// userspace device, daemonPID is the daemon's pid: wg then runs in the
// daemon's mount namespace (nsenter), where its control socket is. For a
// kernel device daemonPID is 0. The dump's stdout (which carries the keys)
// never appears in errors; wg's stderr does.
func WireGuardShow(ctx context.Context, ep *testbed.Endpoint, dev string, daemonPID int) (*WGDump, error) {
	argv := []string{"wg", "show", dev, "dump"}
	if daemonPID > 0 {
		argv = append([]string{"nsenter", "--target", strconv.Itoa(daemonPID), "--mount", "--"}, argv...)
	}
	cmd := ep.Command(ctx, argv...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := ep.Start(cmd); err != nil {
		return nil, err
	}
	err := cmd.Wait()
	ep.Forget(cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %q: %w: %s", ep.Side, strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	d, err := ParseWGDump([]byte(stdout.String()))
	if err != nil {
		return nil, fmt.Errorf("%s: %q: %w", ep.Side, strings.Join(argv, " "), err)
	}
	return d, nil
}

// wgRemoveDirs removes the side directories of method (keys, sockets,
// logs, pid files).
func wgRemoveDirs(env *method.Env, name string) error {
	var errs []error
	for _, ep := range env.Endpoints() {
		if ep == nil {
			continue
		}
		dir := filepath.Join(method.SideRoot(env, ep), name+"-"+ep.Side)
		if err := ep.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// wgDaemon describes a userspace WireGuard implementation.
type wgDaemon struct {
	method  string // method name, names the side directories
	role    string // Daemon.Role
	program string
	version *method.ProgramVersion // program's
	// args are the program's arguments to create device dev and run in
	// the foreground.
	args func(dev string) []string
	env  []string
	// tunFirst makes tunbench create the daemon's TUN device (createTUN)
	// and give it its MTU, address and up state before the daemon starts,
	// which then attaches to it. boringtun needs it: it reads its device's
	// MTU once when it opens the device and then once a second, and
	// reads packets from the device into a buffer of that size, so that
	// for up to a second after the MTU was set on a device it created
	// (with 1500) every packet larger than 1500 bytes was cut short and
	// lost on the way. At an underlay MTU of 9000 a one-second TCP stream
	// right after the set-up then carried nothing. The device outlives
	// the daemon; teardown deletes it.
	tunFirst bool
}

// wgUserspace runs one userspace WireGuard daemon per side. Each daemon
// runs in a private mount namespace whose /run is <side dir>/run, so its
// control socket is <side dir>/run/wireguard/<dev>.sock. It is safe for
// concurrent use by runs with distinct Env.Dir.
type wgUserspace struct {
	d wgDaemon
	// handshakeTimeout, when not zero, replaces wgHandshakeTimeout; and
	// planFault, when set, changes the planned configuration of both
	// sides before it is applied (fault injection, such as a wrong peer
	// key). Both are set by tests only (export_test.go).
	handshakeTimeout time.Duration
	planFault        func(*[2]*wgSide)

	mu   sync.Mutex
	runs map[string][]*method.Process // by Env.Dir
}

func newWGUserspace(d wgDaemon) *wgUserspace {
	return &wgUserspace{d: d, runs: map[string][]*method.Process{}}
}

// wgUserspaceImpl follows the program's version in the Implementation of
// a userspace WireGuard method.
const wgUserspaceImpl = " (userspace, TUN)"

// version is the first line of "PROGRAM --version" on ep's host.
func (u *wgUserspace) version(ctx context.Context, ep *testbed.Endpoint) string {
	return u.d.version.On(ctx, ep)
}

// wgSocket is the host path of the control socket of side s.
func wgSocket(s *wgSide) string { return filepath.Join(s.dir, "run", "wireguard", s.dev+".sock") }

// wgPrivateRun wraps argv so that it runs in a private mount namespace
// with dir bind-mounted on /run (and so on /var/run). unshare and sh exec
// the daemon, so its pid is the one started.
func wgPrivateRun(dir string, argv ...string) []string {
	return append([]string{"unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount --bind "$0" /run && exec "$@"`, dir}, argv...)
}

func (u *wgUserspace) record(env *method.Env, p *method.Process) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.runs[env.Dir] = append(u.runs[env.Dir], p)
}

// start starts the daemon of side s and waits until its device and
// control socket exist.
func (u *wgUserspace) start(ctx context.Context, env *method.Env, s *wgSide) (*method.Process, error) {
	runDir := filepath.Join(s.dir, "run")
	if err := s.ep.MkdirAll(runDir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", runDir, err)
	}
	argv := wgPrivateRun(runDir, append([]string{u.d.program}, u.d.args(s.dev)...)...)
	p, err := method.StartDaemon(s.ep, u.d.role, filepath.Join(s.dir, u.d.role+".log"), u.d.env, argv...)
	if err != nil {
		return nil, err
	}
	u.record(env, p)
	if err := s.ep.WriteFile(filepath.Join(s.dir, u.d.role+".pid"), []byte(strconv.Itoa(p.PID())+"\n"), 0o600); err != nil {
		return p, fmt.Errorf("%s: write %s pid file: %w", s.ep.Side, u.d.role, err)
	}
	sock := wgSocket(s)
	err = method.WaitFor(ctx, method.DaemonStartTimeout, "device "+s.dev+" and "+filepath.Base(sock), func() (bool, error) {
		if err := p.Alive(); err != nil {
			return false, err
		}
		ok, err := wgLinkExists(s.ep, s.dev)
		if err != nil || !ok {
			return false, err
		}
		return method.SocketAccepts(ctx, s.ep, sock)
	})
	if err != nil {
		return p, p.Failure("start", err)
	}
	return p, nil
}

// variant is the program's version on both sides' hosts: one version
// when they agree, "a: V1; b: V2" when they do not.
func (u *wgUserspace) variant(ctx context.Context, env *method.Env) string {
	va, vb := u.version(ctx, env.A), u.version(ctx, env.B)
	if va == vb {
		return va
	}
	return env.A.Side + ": " + va + "; " + env.B.Side + ": " + vb
}

// setup starts both daemons, sets MTU and addresses (before the daemon
// starts, on a device tunbench created, with tunFirst; after, on the
// daemon's own device, otherwise), configures them over their sockets and
// waits for the first handshake. The Variant is the
// program's version on the sides' hosts (both named when they differ).
func (u *wgUserspace) setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	sides, err := wgPlan(env, u.d.method)
	if err != nil {
		return nil, err
	}
	if u.planFault != nil {
		u.planFault(&sides)
	}
	var procs [2]*method.Process
	var ctl [2]wgControl
	var adds []time.Duration
	for i, s := range sides {
		if u.d.tunFirst {
			if err := wgCreateTUN(s); err != nil {
				return nil, err
			}
			if err := wgLinkUp(s.ep, s.dev, env.OverlayMTU, s.addr); err != nil {
				return nil, err
			}
		}
		if procs[i], err = u.start(ctx, env, s); err != nil {
			return nil, err
		}
		if !u.d.tunFirst {
			if err := wgLinkUp(s.ep, s.dev, env.OverlayMTU, s.addr); err != nil {
				return nil, err
			}
		}
		ctl[i] = wgUAPI{ep: s.ep, sock: wgSocket(s)}
		d, err := wgConfigure(ctl[i], s.cfg)
		if err != nil {
			return nil, procs[i].Failure("configure "+s.dev, err)
		}
		adds = append(adds, d...)
	}
	fail := func(i int, what string) error { return procs[i].Failure(what, nil) }
	if err := wgWaitHandshake(ctx, sides, ctl, orDefault(u.handshakeTimeout), fail); err != nil {
		return nil, err
	}
	return &method.Path{
		A:       sides[0].addr.Addr(),
		B:       sides[1].addr.Addr(),
		Devices: map[string][]string{"a": {sides[0].dev, env.A.Dev}, "b": {sides[1].dev, env.B.Dev}},
		Daemons: []method.Daemon{procs[0].Daemon(), procs[1].Daemon()},
		Variant: u.variant(ctx, env),
		Adds:    scaledAdds(env, adds),
	}, nil
}

// rekey forces a new handshake on side a's daemon (see wgRekey).
func (u *wgUserspace) rekey(env *method.Env) (string, error) {
	dir, err := method.SideDir(env, u.d.method, env.A)
	if err != nil {
		return "", err
	}
	s := &wgSide{ep: env.A, dev: wgDevName(env, env.A), dir: dir}
	return wgRekey(env, u.d.method, wgUAPI{ep: env.A, sock: wgSocket(s)})
}

// teardown stops the daemons (which removes their devices and sockets),
// deletes any device left, and removes the side directories.
func (u *wgUserspace) teardown(env *method.Env) error {
	u.mu.Lock()
	procs := u.runs[env.Dir]
	delete(u.runs, env.Dir)
	u.mu.Unlock()
	var errs []error
	for _, p := range procs {
		if err := p.Stop(3 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs,
		method.DelLinks(env.A, wgDevName(env, env.A)),
		method.DelLinks(env.B, wgDevName(env, env.B)),
		wgRemoveDirs(env, u.d.method))
	return errors.Join(errs...)
}

// wgPeerAllowing is the peer of d whose allowed IPs hold addr, or nil.
func wgPeerAllowing(d *wgtypes.Device, addr netip.Addr) *wgtypes.Peer {
	for i, p := range d.Peers {
		for _, n := range p.AllowedIPs {
			if n.Contains(net.IP(addr.AsSlice())) {
				return &d.Peers[i]
			}
		}
	}
	return nil
}

// wgRekey forces a new handshake (method.Rekeyer): side a removes its
// peer (side b's, among the fillers of a scaled set-up), dropping the
// session keys, and adds it back as it was (public key, preshared key
// read from the side directory, endpoint, allowed IPs); a's next packet
// starts a new handshake, which b answers. It returns what it did,
// naming no key.
func wgRekey(env *method.Env, name string, ctl wgControl) (string, error) {
	const how = "remove and re-add the peer on side a (new handshake)"
	d, err := ctl.device()
	if err != nil {
		return how, fmt.Errorf("a: read %s: %w", name, err)
	}
	_, ob := method.Overlay(env.Family)
	p := wgPeerAllowing(d, ob.Addr())
	if p == nil {
		return how, fmt.Errorf("a: %s has no peer allowed %s among its %d (side b's peer)", name, ob.Addr(), len(d.Peers))
	}
	dir, err := method.SideDir(env, name, env.A)
	if err != nil {
		return how, err
	}
	data, err := env.A.ReadFile(filepath.Join(dir, "preshared.key"))
	if err != nil {
		return how, fmt.Errorf("a: read the preshared key: %w", err)
	}
	psk, err := wgtypes.ParseKey(strings.TrimSpace(string(data)))
	if err != nil {
		return how, fmt.Errorf("a: preshared key: %w", errMalformed)
	}
	if err := ctl.configure(wgtypes.Config{Peers: []wgtypes.PeerConfig{{PublicKey: p.PublicKey, Remove: true}}}); err != nil {
		return how, fmt.Errorf("a: remove the peer: %w", err)
	}
	err = ctl.configure(wgtypes.Config{Peers: []wgtypes.PeerConfig{{
		PublicKey: p.PublicKey, PresharedKey: &psk, Endpoint: p.Endpoint,
		ReplaceAllowedIPs: true, AllowedIPs: p.AllowedIPs,
	}}})
	if err != nil {
		return how, fmt.Errorf("a: add the peer back: %w", err)
	}
	return how, nil
}

// wildcardWG is the socket of one WireGuard implementation that cannot
// bind an address: UDP on both families' wildcard addresses, both sides.
func wildcardWG(opts method.Values, program, why string) method.Listen {
	return method.Listen{Proto: "udp", Port: opts.Int("port"), PortOption: "port",
		Addr: method.ListenWildcard, Families: "both", Program: program, Why: why}
}
