package sshtunnel_test

import (
	"os"
	"testing"

	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// TestMain lets the test binary serve as a tunbench agent for the tests
// through agents (testbedtest.IsolatedAgentPair), and stand in for the
// tunbench binary: run as "sshtunnel.test rr ARGS..." it is "tunbench rr
// ARGS...", so the tests run tunbench's request/response tool through
// the tunnel.
func TestMain(m *testing.M) {
	testbedtest.ServeAgentIfAsked()
	if len(os.Args) > 1 && os.Args[1] == "rr" {
		os.Exit(rr.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
