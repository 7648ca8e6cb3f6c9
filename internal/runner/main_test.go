package runner

import (
	"os"
	"testing"

	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// TestMain lets the test binary serve as the agent of
// testbedtest.AgentPair's remote endpoints.
func TestMain(m *testing.M) {
	testbedtest.ServeAgentIfAsked()
	os.Exit(m.Run())
}
