package wireguard

import (
	"time"

	"github.com/tunbench/tunbench/internal/method"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// Exported for the tests of package method_test.

func UAPISet(cfg wgtypes.Config) string { return uapiSet(cfg) }

func ParseUAPIGet(lines []string) (*wgtypes.Device, error) { return parseUAPIGet(lines) }

var ReadUAPIResponse = readUAPIResponse

// WithFaults returns a fresh copy of m, one of this package's methods,
// that waits at most timeout for the first handshake and, when
// wrongPeerKey (userspace methods only), plans side a with a peer key b
// does not have.
func WithFaults(m method.Method, timeout time.Duration, wrongPeerKey bool) method.Method {
	faulty := func(u *wgUserspace) *wgUserspace {
		c := newWGUserspace(u.d)
		c.handshakeTimeout = timeout
		if wrongPeerKey {
			c.planFault = func(s *[2]*wgSide) {
				k, _ := wgtypes.GeneratePrivateKey()
				s[0].cfg.Peers[0].PublicKey = k.PublicKey()
			}
		}
		return c
	}
	switch m := m.(type) {
	case WireGuard:
		if wrongPeerKey {
			panic("wireguard: the wrong-key fault is injected into the userspace set-up")
		}
		return WireGuard{handshakeTimeout: timeout}
	case *WireGuardGo:
		return &WireGuardGo{u: faulty(m.u)}
	case *BoringTun:
		return &BoringTun{u: faulty(m.u)}
	}
	panic("wireguard: WithFaults of " + m.Name())
}

// WGSocket is the host path of the control socket of dev in a side
// directory.
func WGSocket(sideDir, dev string) string { return wgSocket(&wgSide{dir: sideDir, dev: dev}) }

var (
	WGBatches        = wgBatches
	WGFillerEndpoint = wgFillerEndpoint
)

const WGBatch = wgBatch
