package ipsec

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method/methodtest"
)

// The version in the Implementation: "strongSwan 5.9.8" from the captured
// output of the real program, and this machine's own.
func TestProgramVersion(t *testing.T) {
	v := methodtest.CheckProgramVersion(t, programVersion, "testdata/charon_version.txt", "strongSwan 5.9.8")
	if got, want := NewIPsec().Implementation(), v+" charon, IKEv2 PSK; ESP by kernel xfrm or kernel-libipsec (userspace, TUN)"; got != want {
		t.Errorf("Implementation %q, want %q", got, want)
	}
	if got, want := NewIPsecECMP().Implementation(), v+" charon, N IPsec tunnels behind an ECMP nexthop group (L4 hash); kernel-libipsec: a charon and TUN device per tunnel; kernel xfrm: an xfrm interface per CHILD_SA"; got != want {
		t.Errorf("Implementation %q, want %q", got, want)
	}
}
