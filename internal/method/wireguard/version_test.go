package wireguard

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method/methodtest"
)

// The version in the Implementation of the userspace WireGuards: the first
// line of the captured output of the real program, and this machine's
// own.
func TestProgramVersion(t *testing.T) {
	v := methodtest.CheckProgramVersion(t, wireguardGoVersion, "testdata/wireguard-go_version.txt", "wireguard-go v0.0.20250522")
	if got, want := NewWireGuardGo().Implementation(), v+" (userspace, TUN)"; got != want {
		t.Errorf("Implementation %q, want %q", got, want)
	}
	v = methodtest.CheckProgramVersion(t, boringTunVersion, "testdata/boringtun-cli_version.txt", "boringtun 0.7.1")
	if got, want := NewBoringTun().Implementation(), v+" (userspace, TUN)"; got != want {
		t.Errorf("Implementation %q, want %q", got, want)
	}
}
