package methodtest

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// SetupTunnels is Setup with n tunnels (Env.Tunnels, the tunnels
// dimension): it builds a testbed, sets m up with n tunnels, and in
// t.Cleanup tears it down twice and checks that the links of both
// namespaces are as they were before.
func SetupTunnels(t testing.TB, m method.Method, family string, mtu, n int, opts map[string]string) (*localns.Local, *method.Env, *method.Path) {
	t.Helper()
	return setup(t, m, family, mtu, opts, nil, n)
}
