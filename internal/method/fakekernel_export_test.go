package method

import (
	"slices"
	"testing"
)

// SetKernelLacks makes the methods' own kernel probes (creating a tunnel
// device, adding an ESP SA) answer, until t ends, as a kernel built
// without options does. Tests that use it must not run in parallel.
func SetKernelLacks(t testing.TB, options ...string) {
	t.Helper()
	kernelLacks = func(o string) bool { return slices.Contains(options, o) }
	t.Cleanup(func() { kernelLacks = nil })
}
