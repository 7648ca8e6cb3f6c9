package wireguard

import (
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// Exported for the tests of package method_test.

func UAPISet(cfg wgtypes.Config) string { return uapiSet(cfg) }

func ParseUAPIGet(lines []string) (*wgtypes.Device, error) { return parseUAPIGet(lines) }

var ReadUAPIResponse = readUAPIResponse

// SetWGHandshakeTimeout sets the handshake wait and returns a function
// restoring it.
func SetWGHandshakeTimeout(d time.Duration) (restore func()) {
	old := wgHandshakeTimeout
	wgHandshakeTimeout = d
	return func() { wgHandshakeTimeout = old }
}

// SetWGWrongPeerKey makes side a of the next userspace WireGuard set-ups
// expect a peer key b does not have, and returns a function restoring it.
func SetWGWrongPeerKey() (restore func()) {
	wgPlanFault = func(s *[2]*wgSide) {
		k, _ := wgtypes.GeneratePrivateKey()
		s[0].cfg.Peers[0].PublicKey = k.PublicKey()
	}
	return func() { wgPlanFault = nil }
}

// WGSocket is the host path of the control socket of dev in a side
// directory.
func WGSocket(sideDir, dev string) string { return wgSocket(&wgSide{dir: sideDir, dev: dev}) }
