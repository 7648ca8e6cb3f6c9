package wireguard

import (
	"context"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// WireGuardGoInstall builds the pinned wireguard-go release (0.0.20250522,
// the latest; the Go proxy knows it only by this pseudo-version, since its
// tags lack the "v") and installs it as /usr/local/bin/wireguard-go. Debian's
// wireguard-go package is a 2022 build, about 5x slower here.
const WireGuardGoInstall = "GOBIN=/tmp/wireguard-go-build go install golang.zx2c4.com/wireguard@v0.0.0-20260522210424-ecfc5a8d5446 && " +
	"install -m 0755 /tmp/wireguard-go-build/wireguard /usr/local/bin/wireguard-go && rm -r /tmp/wireguard-go-build"

// WireGuardGo is wireguard-go, the userspace Go implementation, one daemon
// per side on a TUN device, configured over its control socket with per-run
// keys and a preshared key. Each daemon gets a private /run, so its socket
// stays in the run directory (see wireguard.go).
//
// Options: "port", the UDP listen port of both sides (default 51820).
type WireGuardGo struct{ u *wgUserspace }

// NewWireGuardGo returns the wireguard-go method.
func NewWireGuardGo() *WireGuardGo {
	return &WireGuardGo{u: newWGUserspace(wgDaemon{
		method:  "wireguard-go",
		role:    "wireguard-go",
		program: "wireguard-go",
		version: wireguardGoVersion,
		args:    func(dev string) []string { return []string{"-f", dev} },
		// WG_PROCESS_FOREGROUND silences the banner that wrongly claims
		// the kernel has WireGuard; verbose logs handshakes, not packets.
		env: []string{"WG_PROCESS_FOREGROUND=1", "LOG_LEVEL=verbose"},
	})}
}

// wireguardGoVersion is the version of this machine's wireguard-go, for
// descriptions (tunbench methods); a cell records its host's
// (ImplementationOn, and the Variant Setup returns).
var wireguardGoVersion = &method.ProgramVersion{Program: "wireguard-go"}

func (*WireGuardGo) Name() string { return "wireguard-go" }

// Implementation names the version installed on this machine, e.g.
// "wireguard-go v0.0.20250522 (userspace, TUN)".
func (*WireGuardGo) Implementation() string { return wireguardGoVersion.Local() + wgUserspaceImpl }

// ImplementationOn names the wireguard-go of ep's host.
func (m *WireGuardGo) ImplementationOn(ctx context.Context, ep *testbed.Endpoint) string {
	return m.u.version(ctx, ep) + wgUserspaceImpl
}

func (*WireGuardGo) Families() []string { return []string{method.IPv4, method.IPv6} }

// Overhead: see wgOverhead (60 bytes over IPv4, 80 over IPv6).
func (*WireGuardGo) Overhead(family string) int { return wgOverhead(family) }

// Options declares the scenario options (see Option).
func (*WireGuardGo) Options() []method.Option { return []method.Option{method.WGPortOption} }

// Listens declares the sockets a run opens (method.Listener): wireguard-go
// has no option to bind an address (its UAPI sets a port only), so each
// side listens on 0.0.0.0 and :: at the listen port.
func (*WireGuardGo) Listens(opts method.Values, _ string) []method.Listen {
	return []method.Listen{wildcardWG(opts, "wireguard-go", "WireGuard's configuration has a listen port and no address: wireguard-go opens it on 0.0.0.0 and ::")}
}

func (*WireGuardGo) Requirements() []method.Requirement {
	return []method.Requirement{
		{Kernel: "CONFIG_TUN", Module: "tun"},
		{Program: "wireguard-go", Install: WireGuardGoInstall},
		{Program: "unshare", Package: "util-linux"},
		{Program: "mount", Package: "mount"},
	}
}

// Setup starts wireguard-go on each side, sets the overlay MTU and address
// on its TUN device, configures keys and peer, and waits for the first
// handshake.
func (m *WireGuardGo) Setup(ctx context.Context, env *method.Env) (*method.Path, error) {
	return m.u.setup(ctx, env)
}

// Teardown stops both daemons and removes their devices, sockets and keys.
func (m *WireGuardGo) Teardown(_ context.Context, env *method.Env) error { return m.u.teardown(env) }

// Rekey forces a new handshake (method.Rekeyer; see wgRekey).
func (m *WireGuardGo) Rekey(_ context.Context, env *method.Env) (string, error) {
	return m.u.rekey(env)
}
