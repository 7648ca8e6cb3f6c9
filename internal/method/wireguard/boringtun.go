package wireguard

import (
	"context"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// BoringTunInstall builds the pinned boringtun-cli from crates.io into
// /usr/local/bin (about a minute on two cores).
const BoringTunInstall = "cargo install boringtun-cli --version 0.7.1 --locked --root /usr/local"

// BoringTun is Cloudflare's userspace WireGuard in Rust (boringtun-cli),
// one daemon per side on a TUN device that tunbench creates for it (with
// the overlay MTU: see Setup), configured over its control socket
// with per-run keys and a preshared key. Each daemon gets a private /run,
// so its socket stays in the run directory (see wireguard.go). It is
// optional: without boringtun-cli the method reports how to install it.
//
// Options: "port", the UDP listen port of both sides (default 51820).
type BoringTun struct{ u *wgUserspace }

// NewBoringTun returns the boringtun method.
func NewBoringTun() *BoringTun {
	return &BoringTun{u: newWGUserspace(wgDaemon{
		method:  "boringtun",
		role:    "boringtun",
		program: "boringtun-cli",
		version: boringTunVersion,
		// Privileges stay: the daemon must remove its socket and
		// device at exit. The log level "info" logs handshakes and
		// errors, not packets; boringtun's default of 4 threads stays.
		args: func(dev string) []string {
			return []string{"--foreground", "--disable-drop-privileges", "--verbosity", "info", dev}
		},
		// Plain log lines, without terminal colour codes.
		env: []string{"NO_COLOR=1"},
		// boringtun would read a device it created at 1500 until its
		// once-a-second MTU check (see tunFirst).
		tunFirst: true,
	})}
}

// boringTunVersion is the version of this machine's boringtun-cli, for
// descriptions (tunbench methods); a cell records its host's
// (ImplementationOn, and the Variant Setup returns).
var boringTunVersion = &method.ProgramVersion{Program: "boringtun-cli"}

func (*BoringTun) Name() string { return "boringtun" }

// Implementation names the version installed on this machine, e.g.
// "boringtun 0.7.1 (userspace, TUN)".
func (*BoringTun) Implementation() string { return boringTunVersion.Local() + wgUserspaceImpl }

// ImplementationOn names the boringtun-cli of ep's host.
func (m *BoringTun) ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string {
	return m.u.version(ctx, ep) + wgUserspaceImpl
}

func (*BoringTun) Families() []string { return []string{method.IPv4, method.IPv6} }

// Overhead: see wgOverhead (60 bytes over IPv4, 80 over IPv6).
func (*BoringTun) Overhead(family string) int { return wgOverhead(family) }

// Options declares the scenario options (see Option).
func (*BoringTun) Options() []method.Option { return []method.Option{method.WGPortOption} }

// Listens declares the sockets a run opens (method.Listener): boringtun
// has no option to bind an address, so each side listens on 0.0.0.0 and
// :: at the listen port; and on 0.0.0.0 and :: at a port the kernel
// picked, the sockets boringtun 0.7.1 opens at start, before its listen
// port is set, and never closes (Device::open_listen_socket takes the
// old sockets out of its event loop by their own descriptors, but the
// loop holds copies made with try_clone, which stay open).
func (*BoringTun) Listens(opts method.Values, _ string) []method.Listen {
	return []method.Listen{
		wildcardWG(opts, "boringtun-cli", "boringtun-cli has no bind option: it opens its port on 0.0.0.0 and ::"),
		{Proto: "udp", Addr: method.ListenWildcard, Families: "both", Program: "boringtun-cli (start-up socket, left open)",
			Why: "boringtun 0.7.1 opens 0.0.0.0 and :: on a port the kernel picks at start and never closes them (a leak in Device::open_listen_socket)"},
	}
}

func (*BoringTun) Requirements() []method.Requirement {
	return []method.Requirement{
		{Kernel: "CONFIG_TUN", Module: "tun"},
		{Program: "boringtun-cli", Install: BoringTunInstall, Optional: true},
		{Program: "unshare", Package: "util-linux"},
		{Program: "mount", Package: "mount"},
	}
}

// Setup creates each side's TUN device with the overlay MTU and address,
// starts boringtun on it (boringtun reads the MTU when it opens the device
// and then only once a second, and cuts every packet it reads down to the
// MTU it knows: on a device it created itself, at 1500, packets above 1500
// bytes were lost for up to a second after the MTU was set), configures
// keys and peer, and waits for the first handshake.
func (m *BoringTun) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	return m.u.setup(ctx, env)
}

// Teardown stops both daemons and removes their devices, sockets and keys.
func (m *BoringTun) Teardown(_ context.Context, env *method.Env) error { return m.u.teardown(env) }

// Rekey forces a new handshake (method.Rekeyer; see wgRekey).
func (m *BoringTun) Rekey(_ context.Context, env *method.Env) (string, error) { return m.u.rekey(env) }
