package agent_test

import (
	"os"
	"testing"

	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

func TestMain(m *testing.M) {
	testbedtest.ServeAgentIfAsked()
	os.Exit(m.Run())
}
