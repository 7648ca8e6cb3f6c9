package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Bed is what validation asks of a testbed: its entry in the testbed
// registry (internal/bed) gives it through the catalog (BedCatalog).
type Bed struct {
	// Name is the testbed's name in the scenario's testbed field.
	Name string
	// Check returns the problems of a scenario on this testbed: its
	// section's, and what the testbed cannot do; nil checks nothing.
	Check func(s Scenario, c Catalog) []error
	// Stray returns the problem of a scenario on another testbed that
	// uses what only this one uses (its section, a kernel to boot),
	// naming the fix; nil when there is nothing such.
	Stray func(s Scenario) error
}

// BedCatalog is implemented by catalogs that know the testbeds, in the
// order a user reads them.
type BedCatalog interface {
	Beds() []Bed
}

// SSHBed, KubernetesBed and VMBed are the checks of the scenario's
// fields the testbeds ssh, kubernetes and vm use (their sections, the
// kernel to boot); their registry entries give them.
var (
	SSHBed = Bed{
		Name:  "ssh",
		Check: func(s Scenario, c Catalog) []error { return s.validateSSH(c) },
		Stray: func(s Scenario) error {
			if s.SSH == nil {
				return nil
			}
			return errors.New("ssh: hosts are only used by testbed ssh: set testbed: ssh or drop the ssh section")
		},
	}
	KubernetesBed = Bed{
		Name:  "kubernetes",
		Check: func(s Scenario, _ Catalog) []error { return s.validateKubernetes() },
		Stray: func(s Scenario) error {
			if s.Kubernetes == nil {
				return nil
			}
			return errors.New("kubernetes: a cluster is only used by testbed kubernetes: set testbed: kubernetes or drop the kubernetes section")
		},
	}
	VMBed = Bed{
		Name: "vm",
		Stray: func(s Scenario) error {
			if s.Kernel == "" {
				return nil
			}
			return errors.New("kernel: a kernel is only booted by testbed vm: set testbed: vm or drop kernel")
		},
	}
)

// validateBed checks the scenario against its testbed and the fields
// only other testbeds use; a catalog that knows no testbeds checks none.
func (s Scenario) validateBed(c Catalog) []error {
	bc, ok := c.(BedCatalog)
	if !ok {
		return nil
	}
	var errs []error
	beds := bc.Beds()
	for _, b := range beds {
		if b.Name == s.Testbed || b.Stray == nil {
			continue
		}
		if err := b.Stray(s); err != nil {
			errs = append(errs, err)
		}
	}
	i := slices.IndexFunc(beds, func(b Bed) bool { return b.Name == s.Testbed })
	if i < 0 {
		names := make([]string, len(beds))
		for j, b := range beds {
			names[j] = b.Name
		}
		return append(errs, fmt.Errorf("testbed: unknown testbed %q: use %s", s.Testbed, or(names)))
	}
	if beds[i].Check != nil {
		errs = append(errs, beds[i].Check(s, c)...)
	}
	return errs
}

func or(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
