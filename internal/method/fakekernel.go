package method

import (
	"slices"

	"golang.org/x/sys/unix"
)

// Faults are failures a test injects into a method's set-up through its
// Env. The runner leaves Env.Faults nil: no fault. Being a value on the
// Env rather than a package variable, a fault reaches only the set-up it
// is given to, so the tests that inject one run in parallel.
type Faults struct {
	// KernelLacks fakes a kernel built without these options (CONFIG_...)
	// at the places where a method asks the kernel by trying: an option
	// named here gets the answer such a kernel gives (rtnetlink's
	// EOPNOTSUPP for a missing link kind, xfrm's EPROTONOSUPPORT for a
	// missing ESP) without the kernel being asked. The tests of the
	// refusal paths use it to run on a kernel that has every option.
	KernelLacks []string
}

// FakeKernelErr returns errno when env's Faults fake a kernel without
// option, and nil otherwise (always, for the runner's Env).
func (e *Env) FakeKernelErr(option string, errno unix.Errno) error {
	if e != nil && e.Faults != nil && slices.Contains(e.Faults.KernelLacks, option) {
		return errno
	}
	return nil
}
