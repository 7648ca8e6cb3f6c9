package load

import (
	"os"
	"testing"

	"github.com/tunbench/tunbench/internal/rr"
)

// TestMain lets the test binary stand in for the tunbench binary: run as
// "load.test rr ARGS..." it is "tunbench rr ARGS...", so the rr tests
// execute the argv of RRServer and RRClient with Exe = os.Args[0].
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "rr" {
		os.Exit(rr.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
