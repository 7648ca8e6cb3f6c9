package nebula

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method/methodtest"
)

// The version in the Implementation: "nebula 1.11.1" from the captured
// output of the real program, and this machine's own.
func TestProgramVersion(t *testing.T) {
	v := methodtest.CheckProgramVersion(t, programVersion, "testdata/nebula_version.txt", "nebula 1.11.1")
	if got, want := New().Implementation(), v+" (userspace, TUN)"; got != want {
		t.Errorf("Implementation %q, want %q", got, want)
	}
}
