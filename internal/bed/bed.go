// Package bed is the registry of testbeds: local, vm, ssh and kubernetes,
// each one Entry saying what it is, what this machine must provide before
// a run on it (Preflight), how the runner opens it (Open), how "tunbench
// clean" cleans it (Clean) and how commands reach its hosts (OnEachSite).
// The command line looks an entry up by the name a user gave and calls
// it; nothing else branches on a testbed's name. What each testbed is
// (name, description, class) lives in the leaf package kind, which the
// report reads without this package's code.
package bed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/tunbench/tunbench/internal/bed/kind"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Entry is one testbed. A nil function is an operation the testbed does
// not offer; the command line refuses it naming the testbeds that do.
type Entry struct {
	// Kind is what the testbed is: its name, description, default,
	// Remote, Local, Lab and reference Class (package kind, which the
	// report reads without this package's code).
	kind.Kind
	// Scenario is what the scenario's validation asks of the testbed:
	// its section's checks (scenario.SSHBed...).
	Scenario scenario.Bed

	// Preflight refuses, before anything is created, a run of s that
	// cannot work from this machine, every reason at once, each naming
	// its fix.
	Preflight func(s scenario.Scenario, reg *method.Registry, env Env) error
	// Unavailable returns the methods of s this machine cannot carry,
	// each with its reason (for --skip-unavailable); nil where each host
	// is checked when the testbed opens.
	Unavailable func(s scenario.Scenario, reg *method.Registry, env Env) []scenario.SkippedMethod
	// Open opens the testbed of s for run id; the runner closes it at
	// the end of the run when it is an io.Closer. log receives what the
	// testbed does on the way (nil discards).
	Open func(ctx context.Context, s scenario.Scenario, reg *method.Registry, env Env, id string, log io.Writer) (testbed.Testbed, error)
	// Clean removes what killed runs left on the testbed and returns
	// the lines to print, also with an error.
	Clean func(ctx context.Context, c CleanJob, env Env) ([]string, error)
	// OnEachSite runs this tunbench with argv on every host of s and
	// returns their output, each line prefixed with the site's name.
	OnEachSite func(ctx context.Context, s scenario.Scenario, reg *method.Registry, env Env, argv []string) ([]string, error)
}

// CleanJob is what "tunbench clean" was asked to clean.
type CleanJob struct {
	// Scenario names the hosts (remote testbeds); Methods is its
	// registry.
	Scenario scenario.Scenario
	Methods  *method.Registry
	// Run, when set, is the run whose state to remove whatever its lock
	// says; Site cleans this machine as that site of Run.
	Run, Site string
}

// Env is what the testbeds are given by the command line: this machine's
// facts (tests give fakes) and this binary's identity.
type Env struct {
	// Probe answers requirement questions from this machine's kernel and
	// PATH (NewHostProbe).
	Probe func() method.Probe
	// Root reports whether the process may create namespaces and links
	// (HasCaps).
	Root func() bool
	// Dial, when set, opens the connections to Kubernetes API servers
	// (tests reach a cluster inside network namespaces this way); nil
	// dials directly.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// BuildID and Version identify this binary, which the agents on other
	// machines must match.
	BuildID func() string
	Version string
	// LabMemoryMiB is the kernel lab's guest memory for testbed vm
	// (--vm-memory); the lab's default when zero.
	LabMemoryMiB int
}

// Host is the Env of this machine: its own probe and capabilities.
func Host(version string, buildID func() string) Env {
	return Env{Probe: NewHostProbe, Root: HasCaps, BuildID: buildID, Version: version}
}

// Entries are the testbeds, the default first.
func Entries() []Entry { return []Entry{local, vm, ssh, kubernetes} }

// Catalog is reg with the testbeds, as the scenario's validation and the
// plan see them (method.Catalog and scenario.BedCatalog).
func Catalog(reg *method.Registry) scenario.Catalog { return catalog{method.Catalog{R: reg}} }

type catalog struct{ method.Catalog }

// Beds are the testbeds' checks (scenario.BedCatalog).
func (catalog) Beds() []scenario.Bed {
	var out []scenario.Bed
	for _, e := range Entries() {
		b := e.Scenario
		b.Name = e.Name
		out = append(out, b)
	}
	return out
}

// Lookup returns the testbed called name ("" is the default), or an
// error that names every testbed.
func Lookup(name string) (Entry, error) {
	for _, e := range Entries() {
		if e.Name == name || name == "" && e.Default {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("unknown testbed %q: use %s", name, Choices(nil))
}

// Named returns the testbed called name, if there is one (the default
// only by its name).
func Named(name string) (Entry, bool) {
	for _, e := range Entries() {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Choices names the testbeds offering what keep says (every one when
// keep is nil) as a user reads them: "local (the default), ssh or
// kubernetes".
func Choices(keep func(Entry) bool) string {
	var names []string
	for _, e := range Entries() {
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
func Help(keep func(Entry) bool, describe bool) string {
	var names []string
	for _, e := range Entries() {
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

// indent puts each joined error on its own indented line.
func indent(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return errors.New(strings.Join(lines, "\n"))
}

func logf(log io.Writer, prefix string) func(format string, args ...any) {
	return func(format string, args ...any) {
		if log != nil {
			fmt.Fprintf(log, prefix+format+"\n", args...)
		}
	}
}
