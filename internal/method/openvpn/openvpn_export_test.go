package openvpn

import (
	"net/netip"
	"time"

	"github.com/tunbench/tunbench/internal/method"
)

// Exported for the tests of package method_test.

// OpenVPNConfigs renders the client (a) and server (b) configuration
// files, and the server's client-config-dir entry, for sides whose
// directories are dirA and dirB.
func OpenVPNConfigs(env *method.Env, dirA, dirB string) (client, server, ccd string, err error) {
	o, err := ParseOpenVPNOptions(env.Options)
	if err != nil {
		return "", "", "", err
	}
	sides := ovpnPlan(env, o)
	sides[0].Dir, sides[1].Dir = dirA, dirB
	return sides[0].Config(), sides[1].Config(), sides[1].CCD(), nil
}

// OpenVPNPKI is the PEM material of one generated run.
type OpenVPNPKI = ovpnPKI

// NewOpenVPNPKI generates a run's certificates and keys.
func NewOpenVPNPKI(now time.Time) (*OpenVPNPKI, error) { return newOVPNPKI(now) }

// OpenVPNStaticKey renders a static key file.
func OpenVPNStaticKey(key []byte) []byte { return ovpnStaticKey(key) }

// OpenVPN certificate common names.
const (
	OpenVPNServerName = ovpnServerName
	OpenVPNClientName = ovpnClientName
)

// OpenVPNNetmask is ovpnNetmask.
func OpenVPNNetmask(p netip.Prefix) string { return ovpnNetmask(p) }
