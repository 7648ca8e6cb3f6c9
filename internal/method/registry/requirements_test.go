package registry_test

import (
	"regexp"
	"testing"

	"github.com/tunbench/tunbench/internal/method/registry"
)

// moduleName is what modprobe accepts as a module name.
var moduleName = regexp.MustCompile(`^[a-z0-9_-]+$`)

// TestKernelRequirementsNameTheirModule: every kernel option a method
// requires names the module that provides it on a modular kernel (Debian's,
// the lab's), or says it is never a module. Without it the preflight of a
// host whose option is "=m" could not tell whether the method runs there
// ("module name unknown"), and the tests could not load it.
func TestKernelRequirementsNameTheirModule(t *testing.T) {
	for _, m := range registry.Builtin().All() {
		for _, r := range m.Requirements() {
			if r.Kernel == "" {
				if r.Module != "" || r.Bool {
					t.Errorf("%s: requirement %s sets Module or Bool without Kernel", m.Name(), r)
				}
				continue
			}
			switch {
			case r.Bool && r.Module != "":
				t.Errorf("%s: %s is a bool option and names module %q: it is one or the other", m.Name(), r.Kernel, r.Module)
			case !r.Bool && r.Module == "":
				t.Errorf("%s: %s names no module: set Module (the module that provides it when built as one) or Bool (never a module)", m.Name(), r.Kernel)
			case r.Module != "" && !moduleName.MatchString(r.Module):
				t.Errorf("%s: %s: module %q is not a module name", m.Name(), r.Kernel, r.Module)
			}
		}
	}
}
