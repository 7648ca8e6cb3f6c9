package ovs

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method/methodtest"
)

// The version in the Implementation: "Open vSwitch 3.1.0" from the captured
// output of the real program, and this machine's own.
func TestProgramVersion(t *testing.T) {
	v := methodtest.CheckProgramVersion(t, programVersion, "testdata/ovs-vswitchd_version.txt", "Open vSwitch 3.1.0")
	if got, want := NewOVSGRE().Implementation(), v+" gre port (netdev or system datapath)"; got != want {
		t.Errorf("Implementation %q, want %q", got, want)
	}
}
