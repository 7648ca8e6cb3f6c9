package method

import (
	"slices"

	"golang.org/x/sys/unix"
)

// kernelLacks, when set (by tests only: SetKernelLacks), fakes a kernel
// built without some options at the places where a method asks the kernel
// by trying: an option it names gets the answer such a kernel gives
// (rtnetlink's EOPNOTSUPP for a missing link kind, xfrm's EPROTONOSUPPORT
// for a missing ESP) without the kernel being asked. The tests of the
// refusal paths use it to run on a kernel that has every option.
var kernelLacks func(option string) bool

// FakeKernelErr returns errno when a test fakes a kernel without option,
// and nil otherwise.
func FakeKernelErr(option string, errno unix.Errno) error {
	if kernelLacks != nil && kernelLacks(option) {
		return errno
	}
	return nil
}

// SetKernelLacks makes the methods' own kernel probes (creating a tunnel
// device, adding an ESP SA) answer as a kernel built without options
// does, until the returned restore is called. It is for the tests of the
// refusal paths (t.Cleanup(method.SetKernelLacks(...))), which must not
// run in parallel.
func SetKernelLacks(options ...string) (restore func()) {
	kernelLacks = func(o string) bool { return slices.Contains(options, o) }
	return func() { kernelLacks = nil }
}
