// Package bed is what every testbed is and offers: the Entry a testbed's
// folder declares (internal/bed/<name>: local, vm, ssh, kubernetes), the
// Env the command line gives it, and what this machine can check
// (HostProbe, PreflightHere). An Entry says what the testbed is (its
// kind.Kind), its scenario section's checks (scenario.Bed: validation
// asks the testbed, and names none), what this machine must provide
// before a run on it (Preflight), how the runner opens it (Open), how
// "tunbench clean" cleans it (Clean) and how commands reach its hosts
// (OnEachSite).
//
// The list of testbeds is internal/bed/registry, one line per testbed;
// it also registers each entry's Kind in the leaf package kind, which
// the report reads without any testbed's code. So a new testbed is a new
// folder under internal/bed and one registry line. The command line
// looks an entry up by the name a user gave and calls it; nothing else
// branches on a testbed's name (TestEveryTestbedIsOneFolder).
package bed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/bed/kind"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Entry is one testbed: the interface every testbed's folder implements,
// as a value (each folder's Entry) rather than a Go interface, so that an
// operation a testbed does not offer is a nil function, which the
// command line refuses naming the testbeds that do offer it.
type Entry struct {
	// Kind is what the testbed is: its name, description, default,
	// Remote, Local, Lab and reference Class (registered in package kind,
	// which the report reads without the testbeds' code).
	kind.Kind
	// Scenario is what the scenario's validation and plan ask of the
	// testbed: the key of its section and its checks, the fields only it
	// uses, what the recover test needs of it, the pairs of sites a cell
	// runs between (its Name is filled from Kind).
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
	// LabTimeout bounds the kernel lab's whole run for testbed vm
	// (--vm-timeout); zero means its budget from the plan's estimate.
	LabTimeout time.Duration
}

// Host is the Env of this machine: its own probe and capabilities.
func Host(version string, buildID func() string) Env {
	return Env{Probe: NewHostProbe, Root: HasCaps, BuildID: buildID, Version: version}
}

// Indent puts each joined error on its own indented line, for a
// testbed's error that heads them ("ssh testbed:\n  ...").
func Indent(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return errors.New(strings.Join(lines, "\n"))
}

// Logf returns a printf writing each line to log with prefix ("ssh
// testbed: "); nil log discards.
func Logf(log io.Writer, prefix string) func(format string, args ...any) {
	return func(format string, args ...any) {
		if log != nil {
			fmt.Fprintf(log, prefix+format+"\n", args...)
		}
	}
}
