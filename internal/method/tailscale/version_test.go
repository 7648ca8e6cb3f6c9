package tailscale

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method/methodtest"
)

// The version in the Implementation: "tailscale 1.100.0" from the captured
// output of the real program, and this machine's own.
func TestProgramVersion(t *testing.T) {
	v := methodtest.CheckProgramVersion(t, programVersion, "testdata/tailscaled_version.txt", "tailscale 1.100.0")
	if got, want := New().Implementation(), v+" (userspace, TUN or netstack)"; got != want {
		t.Errorf("Implementation %q, want %q", got, want)
	}
}
