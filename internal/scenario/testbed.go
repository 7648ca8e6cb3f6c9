package scenario

import (
	"fmt"
	"slices"
	"strings"
)

// Bed is what validation asks of a testbed: its folder's entry in the
// testbed registry (internal/bed) gives it through the catalog
// (BedCatalog), so this package checks a scenario's testbed without
// naming one.
type Bed struct {
	// Name is the testbed's name in the scenario's testbed field.
	Name string
	// Section is the top-level key of the testbed's own section of the
	// scenario ("ssh"; see Section), "" when it has none.
	Section string
	// Check returns the problems of a scenario on this testbed: its
	// section's, and what the testbed cannot do; nil checks nothing.
	Check func(s Scenario, c Catalog) []error
	// Stray returns the problem of a scenario on another testbed that
	// uses what only this one uses (its section, a kernel to boot),
	// naming the fix; nil when there is nothing such.
	Stray func(s Scenario) error
	// CheckRecover returns the problems of the recover test on this
	// testbed, which takes side a's underlay device down and up (a
	// cluster's node would be cut off its cluster; a host's device needs
	// host changes); nil when the testbed allows it.
	CheckRecover func(s Scenario) []error
	// Pairs returns the ordered pairs of sites (sender, receiver) a
	// scenario on this testbed measures between, each cell once per
	// pair; nil when its endpoints are not sites.
	Pairs func(s Scenario) [][2]string
}

// BedCatalog is implemented by catalogs that know the testbeds, in the
// order a user reads them.
type BedCatalog interface {
	Beds() []Bed
}

// bed returns the scenario's testbed from the catalog, if it knows
// testbeds (BedCatalog) and that one.
func (s Scenario) bed(c any) (Bed, bool) {
	bc, ok := c.(BedCatalog)
	if !ok {
		return Bed{}, false
	}
	beds := bc.Beds()
	i := slices.IndexFunc(beds, func(b Bed) bool { return b.Name == s.Testbed })
	if i < 0 {
		return Bed{}, false
	}
	return beds[i], true
}

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
	for _, k := range s.SectionKeys() {
		if !slices.ContainsFunc(beds, func(b Bed) bool { return b.Section != "" && b.Section == k }) {
			errs = append(errs, s.Sections[k].unknown())
		}
	}
	b, ok := s.bed(c)
	if !ok {
		names := make([]string, len(beds))
		for j, b := range beds {
			names[j] = b.Name
		}
		return append(errs, fmt.Errorf("testbed: unknown testbed %q: use %s", s.Testbed, or(names)))
	}
	if b.Check != nil {
		errs = append(errs, b.Check(s, c)...)
	}
	return errs
}

// SitePairs returns the ordered pairs (sender, receiver) of sites the
// scenario measures between, as its testbed gives them (Bed.Pairs): the
// hosts of ssh, the nodes of kubernetes; nil on a testbed without sites.
func (s Scenario) SitePairs(c BedCatalog) [][2]string {
	if b, ok := s.bed(c); ok && b.Pairs != nil {
		return b.Pairs(s)
	}
	return nil
}

// OrderedPairs are a section's pairs of sites, or every ordered pair of
// its sites' names when it gives none.
func OrderedPairs(names []string, pairs [][]string) [][2]string {
	var out [][2]string
	if len(pairs) > 0 {
		for _, p := range pairs {
			if len(p) == 2 {
				out = append(out, [2]string{p[0], p[1]})
			}
		}
		return out
	}
	for _, a := range names {
		for _, b := range names {
			if a != b {
				out = append(out, [2]string{a, b})
			}
		}
	}
	return out
}

// Remote reports whether the run's endpoints are other machines, driven
// through tunbench agents: the scenario has a testbed section naming
// them (ssh hosts, kubernetes nodes; validation keeps each to its own
// testbed), and this machine is then only the controller.
func (s Scenario) Remote() bool { return len(s.Sections) > 0 }

func or(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
