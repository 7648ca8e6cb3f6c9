// Package nebula is the nebula method: Slack's Nebula overlay network, one
// nebula daemon per side on a TUN device, with a per-run certificate
// authority and host certificates, side b the lighthouse.
package nebula

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Version is the pinned Nebula release. v1.11.2, the newest this
// machine's Go builds, cannot be built from the module proxy: its Linux
// TUN code imports a netlink fork (github.com/DefinedNet/netlink
// v1.3.2-dn.1) whose source the proxy refuses. Its fixes are for Windows,
// Android and macOS only; on Linux v1.11.1 is the same program.
const Version = "1.11.1"

// Install builds the pinned nebula and nebula-cert and installs them into
// /usr/local/bin (what scripts/install.sh does).
const Install = "GOBIN=/tmp/nebula-build go install github.com/slackhq/nebula/cmd/nebula@v" + Version +
	" github.com/slackhq/nebula/cmd/nebula-cert@v" + Version + " && " +
	"install -m 0755 /tmp/nebula-build/nebula /tmp/nebula-build/nebula-cert /usr/local/bin/ && rm -r /tmp/nebula-build"

// Port is the default UDP listen port of both sides (option "port"), the
// one Nebula's example configuration uses.
const Port = 4242

// Ciphers (option "cipher"): AES-256-GCM or ChaCha20-Poly1305. Nebula
// needs the same one on every node.
const (
	CipherAES        = "aes"
	CipherChaChaPoly = "chachapoly"
)

var options = []method.Option{
	{Name: "cipher", Default: CipherAES, Values: []string{CipherAES, CipherChaChaPoly},
		Help: "data cipher of both sides: AES-256-GCM (aes) or ChaCha20-Poly1305 (chachapoly)"},
	{Name: "port", Default: strconv.Itoa(Port), Min: 1, Max: 65535,
		Help: "UDP listen port of both sides"},
}

// defaultHandshakeTimeout is Nebula.HandshakeTimeout's default.
const defaultHandshakeTimeout = 15 * time.Second

// handshakeTimeout is n's wait for the first packet through the tunnel.
func (n *Nebula) handshakeTimeout() time.Duration {
	if n.HandshakeTimeout > 0 {
		return n.HandshakeTimeout
	}
	return defaultHandshakeTimeout
}

// Nebula is Slack's Nebula: one nebula daemon per side, each creating its
// TUN device (named with the run's prefix, MTU the overlay MTU) and
// setting its overlay address from its certificate. Side b is the
// lighthouse; side a finds it through static_host_map at b's underlay
// address. Punching and relays are off, the firewall admits everything
// between the two, both listen on the same fixed port at their underlay
// address, and each logs (level info: handshakes, not packets) to a file
// in its side directory.
//
// Every run makes its own CA and host certificates (Curve25519, format v2,
// valid 48 hours) with nebula-cert on side a; b's certificate and key reach
// b through the endpoint. The CA key is deleted once both are signed. The
// host keys are 0600 files in the side directories, removed at teardown.
//
// Options: "cipher" ("aes", the default, or "chachapoly") and "port"
// (default 4242). It is safe for concurrent use by runs with distinct
// Env.Dir.
type Nebula struct {
	// HandshakeTimeout bounds the wait for the first packet through the
	// tunnel; zero is 15 s (tests shorten it).
	HandshakeTimeout time.Duration

	mu   sync.Mutex
	runs map[string][]*method.Process // by Env.Dir
}

// New returns the nebula method.
func New() *Nebula { return &Nebula{runs: map[string][]*method.Process{}} }

func (*Nebula) Name() string { return "nebula" }

// Scale says nebula sets up one tunnel (method.Scaler): one host per
// side.
func (*Nebula) Scale(string, method.Values) method.Scale {
	return method.Scale{Unit: "host", Max: 1,
		Why: "nebula runs one host per side (one daemon, one certificate, b the lighthouse); N hosts would be N daemons, certificates and TUN devices per side, which this method does not set up"}
}

// impl follows the version in the Implementation.
const impl = " (userspace, TUN)"

// programVersion turns the first line of "nebula --version" ("Version:
// 1.11.1") into "nebula 1.11.1"; another first line stays as it is.
var programVersion = &method.ProgramVersion{Program: "nebula", Parse: func(out []byte) string {
	line := method.FirstLine(out)
	if v, ok := strings.CutPrefix(line, "Version: "); ok {
		return "nebula " + v
	}
	return line
}}

// Implementation names the version installed on this machine, e.g.
// "nebula 1.11.1 (userspace, TUN)".
func (*Nebula) Implementation() string { return programVersion.Local() + impl }

// ImplementationOn names the nebula of ep's host.
func (*Nebula) ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string {
	return programVersion.On(ctx, ep) + impl
}

// Families: Nebula carries IPv4 and, with version 2 certificates (since
// 1.10), IPv6 overlay addresses, over an underlay of the same family.
func (*Nebula) Families() []string { return []string{method.IPv4, method.IPv6} }

// Overhead is the outer IP header (20 for IPv4, 40 for IPv6), UDP (8),
// Nebula's header (16: version and type 1, subtype 1, reserved 2, remote
// index 4, message counter 8) and the AEAD tag (16, for both ciphers):
// 60 bytes over IPv4, 80 over IPv6. Nebula does not pad.
func (*Nebula) Overhead(family string) int {
	if family == method.IPv6 {
		return 40 + 8 + 16 + 16
	}
	return 20 + 8 + 16 + 16
}

// Options declares the scenario options (see Option).
func (*Nebula) Options() []method.Option { return options }

// Listens declares the sockets a run opens (method.Listener): each side's
// nebula on its underlay address (listen.host) at option port.
func (*Nebula) Listens(opts method.Values, _ string) []method.Listen {
	return []method.Listen{{Proto: "udp", Port: opts.Int("port"), PortOption: "port",
		Addr: method.ListenUnderlay, Program: "nebula"}}
}

func (*Nebula) Requirements() []method.Requirement {
	return []method.Requirement{
		{Kernel: "CONFIG_TUN", Module: "tun"},
		{Program: "nebula", Install: Install},
		{Program: "nebula-cert", Install: Install},
		{Program: "ping", Package: "iputils-ping"},
	}
}

// DevName is the TUN device of side ep.
func DevName(env *method.Env, ep *testbed.Endpoint) string { return env.Prefix + "-nb" + ep.Side }

// side is the plan of one side.
type side struct {
	ep   *testbed.Endpoint
	dev  string
	dir  string       // private side directory (0700)
	addr netip.Prefix // overlay address, in the certificate
}

// The files of a side directory.
const (
	caFile     = "ca.crt"
	certFile   = "host.crt"
	keyFile    = "host.key"
	configFile = "config.yml"
	logFile    = "nebula.log"
	pidFile    = "nebula.pid"
	pkiDir     = "pki" // on a, while nebula-cert runs
)

// certDuration is how long the run's CA and host certificates are valid.
const certDuration = "48h"

// run runs argv on ep; its error quotes the side, argv and output.
func run(ctx context.Context, ep *testbed.Endpoint, argv ...string) error {
	_, err := ep.Run(ctx, argv...)
	return err
}

// pki makes the run's CA on side a, signs both host certificates with
// it, deletes the CA key, and puts each side's CA certificate,
// certificate and key (0600) into its side directory: b's through the
// endpoints. nebula-cert's output names files, never keys.
func pki(ctx context.Context, env *method.Env, sides [2]*side) error {
	a := sides[0]
	dir := filepath.Join(a.dir, pkiDir)
	if err := a.ep.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%s: create %s: %w", a.ep.Side, dir, err)
	}
	defer a.ep.RemoveAll(dir)
	caCrt, caKey := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := run(ctx, a.ep, "nebula-cert", "ca", "-name", "tunbench "+filepath.Base(env.Dir),
		"-duration", certDuration, "-out-crt", caCrt, "-out-key", caKey); err != nil {
		return err
	}
	ca, err := a.ep.ReadFile(caCrt)
	if err != nil {
		return fmt.Errorf("%s: read %s: %w", a.ep.Side, caCrt, err)
	}
	for _, s := range sides {
		crt, key := filepath.Join(dir, s.ep.Side+".crt"), filepath.Join(dir, s.ep.Side+".key")
		if err := run(ctx, a.ep, "nebula-cert", "sign", "-ca-crt", caCrt, "-ca-key", caKey,
			"-name", "tunbench-"+s.ep.Side, "-networks", s.addr.String(),
			"-out-crt", crt, "-out-key", key); err != nil {
			return err
		}
		crtData, err := a.ep.ReadFile(crt)
		if err != nil {
			return fmt.Errorf("%s: read %s: %w", a.ep.Side, crt, err)
		}
		keyData, err := a.ep.ReadFile(key)
		if err != nil {
			return fmt.Errorf("%s: read %s: %w", a.ep.Side, filepath.Base(key), err)
		}
		if err := s.ep.WriteFile(filepath.Join(s.dir, caFile), ca, 0o644); err != nil {
			return fmt.Errorf("%s: write %s: %w", s.ep.Side, caFile, err)
		}
		if err := s.ep.WriteFile(filepath.Join(s.dir, certFile), crtData, 0o644); err != nil {
			return fmt.Errorf("%s: write %s: %w", s.ep.Side, certFile, err)
		}
		if err := method.WriteSecret(s.ep, filepath.Join(s.dir, keyFile), keyData); err != nil {
			return fmt.Errorf("%s: %w", s.ep.Side, err)
		}
	}
	if err := a.ep.RemoveAll(dir); err != nil {
		return fmt.Errorf("%s: remove %s (CA key): %w", a.ep.Side, dir, err)
	}
	return nil
}

// yamlAddr quotes an address for the YAML configuration.
func yamlAddr(a netip.Addr) string { return strconv.Quote(a.String()) }

// config renders the nebula configuration of side s, whose peer is
// peer; lighthouse makes s the lighthouse (b), else s finds peer, the
// lighthouse, at its underlay address.
func config(env *method.Env, s, peer *side, lighthouse bool, cipher string, port int) string {
	under := s.ep.Addr(env.Family)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# nebula configuration of side %s, written by tunbench for one run", s.ep.Side)
	w("pki:")
	w("  ca: %s", strconv.Quote(filepath.Join(s.dir, caFile)))
	w("  cert: %s", strconv.Quote(filepath.Join(s.dir, certFile)))
	w("  key: %s", strconv.Quote(filepath.Join(s.dir, keyFile)))
	if lighthouse {
		w("static_host_map: {}")
	} else {
		peerUnder := netip.AddrPortFrom(peer.ep.Addr(env.Family), uint16(port))
		w("static_host_map:")
		w("  %s: [%s]", yamlAddr(peer.addr.Addr()), strconv.Quote(peerUnder.String()))
	}
	w("lighthouse:")
	w("  am_lighthouse: %t", lighthouse)
	w("  interval: 60")
	if lighthouse {
		w("  hosts: []")
	} else {
		w("  hosts: [%s]", yamlAddr(peer.addr.Addr()))
	}
	// Only the underlay address is reported to the lighthouse, so that
	// no other address of the host is ever tried.
	w("  local_allow_list:")
	w("    %s: true", strconv.Quote(method.HostPrefix(under).String()))
	w("listen:")
	w("  host: %s", yamlAddr(under))
	w("  port: %d", port)
	w("punchy:")
	w("  punch: false")
	w("  respond: false")
	w("relay:")
	w("  am_relay: false")
	w("  use_relays: false")
	w("cipher: %s", cipher)
	w("tun:")
	w("  disabled: false")
	w("  dev: %s", strconv.Quote(s.dev))
	w("  mtu: %d", env.OverlayMTU)
	w("  drop_local_broadcast: false")
	w("  drop_multicast: false")
	w("logging:")
	w("  level: info")
	w("  format: text")
	w("firewall:")
	w("  outbound_action: drop")
	w("  inbound_action: drop")
	w("  outbound:")
	w("    - {port: any, proto: any, host: any}")
	w("  inbound:")
	w("    - {port: any, proto: any, host: any}")
	return b.String()
}

func (n *Nebula) record(env *method.Env, p *method.Process) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.runs[env.Dir] = append(n.runs[env.Dir], p)
}

// start starts the nebula daemon of side s and waits until its device
// is up with its overlay address.
func (n *Nebula) start(ctx context.Context, env *method.Env, s *side) (*method.Process, error) {
	cfg := filepath.Join(s.dir, configFile)
	p, err := method.StartDaemon(s.ep, "nebula", filepath.Join(s.dir, logFile), nil, "nebula", "-config", cfg)
	if err != nil {
		return nil, err
	}
	n.record(env, p)
	if err := s.ep.WriteFile(filepath.Join(s.dir, pidFile), []byte(strconv.Itoa(p.PID())+"\n"), 0o600); err != nil {
		return p, fmt.Errorf("%s: write nebula pid file: %w", s.ep.Side, err)
	}
	err = method.WaitFor(ctx, method.DaemonStartTimeout, "device "+s.dev+" with "+s.addr.String(), func() (bool, error) {
		if err := p.Alive(); err != nil {
			return false, err
		}
		return method.DeviceUp(s.ep, s.dev, s.addr.Addr())
	})
	if err != nil {
		return p, p.Failure("start", err)
	}
	return p, nil
}

// Setup makes the run's certificates, starts nebula on b (the
// lighthouse) and a, and waits until a ping from a reaches b through the
// tunnel (a's first packet starts the handshake). The Variant is the
// nebula version of the sides' hosts and the cipher.
func (n *Nebula) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	if !method.Supports(n, env.Family) {
		return nil, method.UnsupportedFamily(n, env.Family)
	}
	opts, err := method.ParseDeclared(n.Name(), options, env.Options)
	if err != nil {
		return nil, err
	}
	oa, ob := method.Overlay(env.Family)
	var sides [2]*side
	for i, ep := range env.Endpoints() {
		dir, err := method.SideDir(env, n.Name(), ep)
		if err != nil {
			return nil, err
		}
		sides[i] = &side{ep: ep, dev: DevName(env, ep), dir: dir, addr: [2]netip.Prefix{oa, ob}[i]}
	}
	if err := pki(ctx, env, sides); err != nil {
		return nil, fmt.Errorf("nebula certificates: %w", err)
	}
	var procs [2]*method.Process
	// b, the lighthouse, first.
	for _, i := range []int{1, 0} {
		s := sides[i]
		cfg := config(env, s, sides[1-i], i == 1, opts.String("cipher"), opts.Int("port"))
		if err := s.ep.WriteFile(filepath.Join(s.dir, configFile), []byte(cfg), 0o600); err != nil {
			return nil, fmt.Errorf("%s: write %s: %w", s.ep.Side, configFile, err)
		}
		if procs[i], err = n.start(ctx, env, s); err != nil {
			return nil, err
		}
	}
	if err := waitTunnel(ctx, sides, procs, n.handshakeTimeout()); err != nil {
		return nil, err
	}
	va, vb := n.ImplementationOn(ctx, env.A), n.ImplementationOn(ctx, env.B)
	variant := strings.TrimSuffix(va, impl)
	if va != vb {
		variant = env.A.Side + ": " + strings.TrimSuffix(va, impl) + "; " + env.B.Side + ": " + strings.TrimSuffix(vb, impl)
	}
	return &method.Path{
		A:       sides[0].addr.Addr(),
		B:       sides[1].addr.Addr(),
		Devices: map[string][]string{"a": {sides[0].dev, env.A.Dev}, "b": {sides[1].dev, env.B.Dev}},
		Daemons: []method.Daemon{procs[0].Daemon(), procs[1].Daemon()},
		Variant: variant + ", cipher " + opts.String("cipher"),
	}, nil
}

// waitTunnel pings b's overlay address from a, once a second, until it
// answers: the first ping starts the handshake. On timeout the error
// quotes both daemons' logs.
func waitTunnel(ctx context.Context, sides [2]*side, procs [2]*method.Process, handshakeTimeout time.Duration) error {
	a, b := sides[0], sides[1]
	var last error
	err := method.WaitFor(ctx, handshakeTimeout, "nebula tunnel", func() (bool, error) {
		for _, p := range procs {
			if err := p.Alive(); err != nil {
				return false, err
			}
		}
		_, last = a.ep.Run(ctx, "ping", "-c", "1", "-W", "1", b.addr.Addr().String())
		return last == nil, nil
	})
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("no ping through nebula from %s (%s) to %s (%s) within %s", a.ep.Side, a.addr.Addr(), b.ep.Side, b.addr.Addr(), handshakeTimeout)
	if last != nil {
		what += fmt.Sprintf(" (last: %v)", last)
	}
	return errors.Join(procs[0].Failure(what, err), procs[1].Failure("peer of "+a.ep.Side, nil))
}

// Teardown stops both daemons (which removes their devices), deletes any
// device left, and removes the side directories (certificates, keys,
// configuration, logs).
func (n *Nebula) Teardown(_ context.Context, env *method.Env) error {
	n.mu.Lock()
	procs := n.runs[env.Dir]
	delete(n.runs, env.Dir)
	n.mu.Unlock()
	var errs []error
	for _, p := range procs {
		if err := p.Stop(3 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ep := range env.Endpoints() {
		if ep == nil {
			continue
		}
		errs = append(errs, method.DelLinks(ep, DevName(env, ep)))
		dir := filepath.Join(method.SideRoot(env, ep), n.Name()+"-"+ep.Side)
		if err := ep.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("%s: remove %s: %w", ep.Side, dir, err))
		}
	}
	return errors.Join(errs...)
}
