package method

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

// WGSocket is the host path of the control socket of dev in a side
// directory.
func WGSocket(sideDir, dev string) string { return wgSocket(&wgSide{dir: sideDir, dev: dev}) }
