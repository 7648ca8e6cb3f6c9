package macsec_test

import (
	"os"
	"testing"

	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// TestMain lets the test binary serve as a tunbench agent for the tests
// that run the method on remote endpoints (testbedtest.IsolatedAgentPair).
func TestMain(m *testing.M) {
	testbedtest.ServeAgentIfAsked()
	os.Exit(m.Run())
}
