// Package kind says what each testbed is, without what it does: its name,
// the line --help gives it, whether it is the default, whether its
// endpoints are this machine's namespaces, other machines or the kernel
// lab's guest, and the reference class its results belong to. Each
// testbed's folder (internal/bed/<name>) declares its Kind in its entry,
// and the testbed registry (internal/bed/registry) registers them here
// in its order, so a new testbed adds no line to this package. It imports
// nothing of tunbench's testbeds, so the report (which reads stored runs
// offline) can ask it without pulling in the code that opens and cleans
// them; a program (or test) that reads kinds links the registry, as the
// command line does, and one that forgets it panics on its first
// question rather than getting wrong answers.
package kind

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is what one testbed is.
type Kind struct {
	// Name is the testbed's name in scenarios and on --testbed.
	Name string
	// Description is the one line --help gives the testbed.
	Description string
	// Default marks the testbed a scenario without one runs on.
	Default bool
	// Remote: the endpoints are other machines (hosts, a cluster's
	// nodes), named by the scenario's section of this testbed; this
	// machine only drives them and stores the results.
	Remote bool
	// Local: the endpoints are this machine's namespaces, so commands
	// that inspect them (ebpf stats) read them here.
	Local bool
	// Lab: the whole run happens in the kernel lab, a guest booted under
	// qemu that runs the scenario on its own local testbed; such a run
	// cannot be resumed yet.
	Lab bool
	// Class is the reference class of the testbed (scenario.Testbed*),
	// "" where it cannot be told.
	Class string
}

// kinds are the registered testbeds, in the registry's order.
var kinds []Kind

// Register adds k to the testbeds All returns; the testbed registry
// (internal/bed/registry) registers every entry's Kind, in its order, when
// it is linked into the program. It panics on a name given twice: two
// testbeds cannot share one.
func Register(k Kind) {
	if k.Name == "" || slices.ContainsFunc(kinds, func(o Kind) bool { return o.Name == k.Name }) {
		panic(fmt.Sprintf("kind: testbed %q registered twice or without a name", k.Name))
	}
	kinds = append(kinds, k)
}

// All are the registered testbeds, the default first. It panics when
// none is: the program (or test) asks what testbeds are without having
// linked the registry, and every answer would be wrong.
func All() []Kind {
	if len(kinds) == 0 {
		panic("kind: no testbed registered: import internal/bed/registry (for its side effect, in a test) to learn what the testbeds are")
	}
	return kinds
}

// Lookup returns the testbed called name ("" is the default, as in a
// record or scenario that names none), or an error that names every
// testbed.
func Lookup(name string) (Kind, error) {
	for _, k := range All() {
		if k.Name == name || name == "" && k.Default {
			return k, nil
		}
	}
	var names []string
	for _, k := range All() {
		names = append(names, k.Name)
	}
	return Kind{}, fmt.Errorf("unknown testbed %q: use %s", name, strings.Join(names, ", "))
}

// Named returns the testbed called name, if there is one (the default
// only by its name).
func Named(name string) (Kind, bool) {
	for _, k := range All() {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}
