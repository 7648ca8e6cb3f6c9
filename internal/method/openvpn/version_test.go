package openvpn

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method/methodtest"
)

// The version in the Implementation: "OpenVPN 2.6.14, OpenSSL 3.0.19" from the captured
// output of the real program, and this machine's own.
func TestProgramVersion(t *testing.T) {
	v := methodtest.CheckProgramVersion(t, programVersion, "testdata/openvpn_version.txt", "OpenVPN 2.6.14, OpenSSL 3.0.19")
	if got, want := NewOpenVPN().Implementation(), v+" (userspace, TUN)"; got != want {
		t.Errorf("Implementation %q, want %q", got, want)
	}
}
