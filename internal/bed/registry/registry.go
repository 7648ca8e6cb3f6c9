// Package registry holds the single list of the testbeds tunbench
// offers, one line per testbed folder of internal/bed, the default
// first; the command line looks a testbed up here by the name a user
// gave. Linking it registers every entry's Kind in package kind, so
// readers of stored runs (the report) learn what each testbed is
// without importing this package.
package registry

import (
	"fmt"
	"strings"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/bed/kind"
	"github.com/tunbench/tunbench/internal/bed/kubernetes"
	"github.com/tunbench/tunbench/internal/bed/local"
	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/bed/vm"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/scenario"
)

// entries are the testbeds, the default first.
var entries = []bed.Entry{
	local.Entry,
	vm.Entry,
	ssh.Entry,
	kubernetes.Entry,
}

func init() {
	for _, e := range entries {
		kind.Register(e.Kind)
	}
}

// Entries are the testbeds, the default first.
func Entries() []bed.Entry { return entries }

// Catalog is reg with the testbeds, as the scenario's validation and the
// plan see them (method.Catalog and scenario.BedCatalog).
func Catalog(reg *method.Registry) scenario.Catalog { return catalog{method.Catalog{R: reg}} }

type catalog struct{ method.Catalog }

// Beds are the testbeds' checks (scenario.BedCatalog).
func (catalog) Beds() []scenario.Bed {
	var out []scenario.Bed
	for _, e := range entries {
		b := e.Scenario
		b.Name = e.Name
		out = append(out, b)
	}
	return out
}

// Lookup returns the testbed called name ("" is the default), or an
// error that names every testbed.
func Lookup(name string) (bed.Entry, error) {
	for _, e := range entries {
		if e.Name == name || name == "" && e.Default {
			return e, nil
		}
	}
	return bed.Entry{}, fmt.Errorf("unknown testbed %q: use %s", name, Choices(nil))
}

// Named returns the testbed called name, if there is one (the default
// only by its name).
func Named(name string) (bed.Entry, bool) {
	for _, e := range entries {
		if e.Name == name {
			return e, true
		}
	}
	return bed.Entry{}, false
}

// Choices names the testbeds offering what keep says (every one when
// keep is nil) as a user reads them: "local (the default), ssh or
// kubernetes".
func Choices(keep func(bed.Entry) bool) string {
	var names []string
	for _, e := range entries {
		if keep != nil && !keep(e) {
			continue
		}
		n := e.Name
		if e.Default {
			n += " (the default)"
		}
		names = append(names, n)
	}
	return or(names)
}

// Help is the --testbed flag's text naming the testbeds offering what
// keep says (every one when keep is nil), with their descriptions when
// describe: "local (default), vm (the kernel lab) or ...".
func Help(keep func(bed.Entry) bool, describe bool) string {
	var names []string
	for _, e := range entries {
		if keep != nil && !keep(e) {
			continue
		}
		switch {
		case e.Default:
			names = append(names, e.Name+" (default)")
		case describe:
			names = append(names, fmt.Sprintf("%s (%s)", e.Name, e.Description))
		default:
			names = append(names, e.Name)
		}
	}
	return or(names)
}

func or(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
