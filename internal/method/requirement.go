package method

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ErrNotSupported marks a method this machine cannot run; the wrapped
// message says why and how to fix it.
var ErrNotSupported = errors.New("not supported on this machine")

// Requirement is one thing a method needs from the machine. Exactly one of
// Kernel, Program and Feature is set.
type Requirement struct {
	// Kernel is a kernel config option such as "CONFIG_VXLAN"; Module
	// the kernel module that provides it where it is built as one (=m),
	// e.g. "vxlan", which the checks look for and the tests load; Bool
	// marks an option that is never a module (y or unset, such as
	// CONFIG_BPF_SYSCALL). Every kernel requirement sets one of the two
	// (TestKernelRequirementsNameTheirModule).
	Kernel string
	Module string
	Bool   bool
	// Program is an executable looked up in PATH; Package is the Debian
	// package providing it and Install the command that installs it when
	// that is not a plain apt-get install.
	Program string
	Package string
	Install string
	// Feature is a kernel capability no config option captures (a BPF
	// hook or helper), e.g. "BPF tc programs with bpf_skb_adjust_room
	// tunnel flags"; Probe tests it and returns why it is missing.
	Feature string
	Probe   func() error
	// Optional requirements make the method report "not ready" but are not
	// an error when the method is not asked for.
	Optional bool
}

func (r Requirement) String() string {
	if r.Kernel != "" {
		return "kernel " + r.Kernel
	}
	if r.Feature != "" {
		return "kernel feature " + r.Feature
	}
	return "program " + r.Program
}

// Fix is the instruction that satisfies the requirement.
func (r Requirement) Fix() string {
	switch {
	case r.Kernel != "":
		return fmt.Sprintf("a kernel with %s, or the kernel lab: --testbed vm", r.Kernel)
	case r.Feature != "":
		return "a kernel with " + r.Feature
	case r.Install != "":
		return r.Install
	case r.Package != "":
		return "apt-get install -y --no-install-recommends " + r.Package
	}
	return "install " + r.Program
}

// Probe answers requirement questions about the machine. The real one reads
// the kernel config and PATH; tests use a fake.
type Probe interface {
	// HasKernel reports whether the kernel can use option: built in, or
	// as module (loaded or installed).
	HasKernel(option, module string) (bool, error)
	HasProgram(name string) bool
}

// Check returns nil when every requirement holds, or an error wrapping
// ErrNotSupported that names each missing requirement and its fix. The
// missing kernel options share one fix ("CONFIG_A, CONFIG_B missing (fix:
// a kernel with all of them, or the kernel lab: --testbed vm)"), given
// where the first of them is.
func Check(p Probe, reqs []Requirement) error {
	var missing, kernel []string
	kernelAt := -1
	for _, r := range reqs {
		ok := true
		switch {
		case r.Kernel != "":
			has, err := p.HasKernel(r.Kernel, r.Module)
			if err != nil {
				return fmt.Errorf("check %s: %w", r, err)
			}
			ok = has
		case r.Program != "":
			ok = p.HasProgram(r.Program)
		case r.Probe != nil:
			if err := r.Probe(); err != nil {
				missing = append(missing, fmt.Sprintf("needs %s: %v", r.Feature, err))
			}
		}
		if !ok && r.Kernel != "" {
			if kernelAt < 0 {
				kernelAt = len(missing)
				missing = append(missing, "")
			}
			kernel = append(kernel, r.Kernel)
		} else if !ok {
			missing = append(missing, fmt.Sprintf("%s missing (fix: %s)", r.Program, r.Fix()))
		}
	}
	if kernelAt >= 0 {
		fix := Requirement{Kernel: kernel[0]}.Fix()
		if len(kernel) > 1 {
			fix = "a kernel with all of them, or the kernel lab: --testbed vm"
		}
		missing[kernelAt] = fmt.Sprintf("%s missing (fix: %s)", strings.Join(kernel, ", "), fix)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrNotSupported, strings.Join(missing, "; "))
	}
	return nil
}

// KernelFunc adapts a kernel-option predicate (option, module) and
// exec.LookPath into a Probe.
type KernelFunc func(option, module string) (bool, error)

// HasKernel implements Probe.
func (f KernelFunc) HasKernel(option, module string) (bool, error) { return f(option, module) }

// HasProgram implements Probe with exec.LookPath.
func (f KernelFunc) HasProgram(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
