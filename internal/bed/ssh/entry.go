package ssh

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/bed/kind"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Entry is the ssh testbed: the hosts of the scenario's ssh section, each
// driven over SSH by an agent of this binary.
var Entry = bed.Entry{
	Kind: kind.Kind{
		Name:        "ssh",
		Description: "the hosts of the scenario's ssh section, -f",
		Remote:      true,
	},
	Scenario:  scenario.Bed{Section: SectionKey, Check: check, Stray: stray, CheckRecover: checkRecover, Pairs: pairs},
	Preflight: RemotePreflight,
	Open: func(ctx context.Context, s scenario.Scenario, reg *method.Registry, env bed.Env, id string, log io.Writer) (testbed.Testbed, error) {
		tb, err := Open(ctx, ScenarioConfig(s, reg, env, id, log))
		if err != nil {
			return nil, fmt.Errorf("ssh testbed:\n%w", bed.Indent(err))
		}
		return tb, nil
	},
	Clean: func(ctx context.Context, c bed.CleanJob, env bed.Env) ([]string, error) {
		lines, err := Clean(ctx, ScenarioConfig(c.Scenario, c.Methods, env, c.Run, nil), c.Run)
		return lines, WrapClean(err)
	},
	OnEachSite: func(ctx context.Context, s scenario.Scenario, reg *method.Registry, env bed.Env, argv []string) ([]string, error) {
		return OnEachSite(ctx, ScenarioConfig(s, reg, env, "", nil), func(string) []string { return argv })
	},
}

// RemotePreflight asks nothing of this machine: it is only the
// controller, and each host is checked by its own kernel when the
// testbed opens, before anything is created on any host (the ssh and
// kubernetes testbeds' Preflight).
func RemotePreflight(scenario.Scenario, *method.Registry, bed.Env) error { return nil }

// WrapClean heads the hosts' clean errors, one per line.
func WrapClean(err error) error {
	if err != nil {
		return fmt.Errorf("clean:\n%w", bed.Indent(err))
	}
	return nil
}

// Tools lists what every host of a remote run needs: the load tools of
// the scenario's tests and the programs of its methods.
func Tools(s scenario.Scenario, reg *method.Registry) []remotehost.Tool {
	tools := []remotehost.Tool{{Program: "iperf3"}}
	if s.LatencyTool == "sockperf" && s.HasTest(scenario.TestTCPRR) {
		tools = append(tools, remotehost.Tool{Program: "sockperf"})
	}
	for _, name := range s.Methods {
		m, err := reg.Get(name)
		if err != nil {
			continue
		}
		for _, r := range m.Requirements() {
			if r.Program == "" {
				continue
			}
			t := remotehost.Tool{Program: r.Program, Package: r.Package, Install: r.Install}
			if !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
	}
	return tools
}

// Needs are the scenario's methods and their requirements, which the
// remote testbeds check on every host (their kernel options against the
// host's own kernel) before anything is created there.
func Needs(s scenario.Scenario, reg *method.Registry) []MethodNeeds {
	var out []MethodNeeds
	for _, name := range s.Methods {
		if m, err := reg.Get(name); err == nil {
			out = append(out, MethodNeeds{Name: name, Requirements: m.Requirements()})
		}
	}
	return out
}

// ScenarioConfig is the ssh testbed configuration of scenario s for run
// id.
func ScenarioConfig(s scenario.Scenario, reg *method.Registry, env bed.Env, id string, log io.Writer) Config {
	// Each host's underlay carries an address of every family the
	// methods need there (srv6: IPv6, whatever it carries).
	fams, _ := s.UnderlayFamilies(method.Catalog{R: reg})
	if len(fams) == 0 {
		fams = s.Families
	}
	hosts, _ := FromScenario(s) // validation has decoded it
	return Config{
		SSH: hosts, Families: fams, MTUs: s.MTUs, Offloads: s.Offloads,
		ID: id, BuildID: env.BuildID(), Version: env.Version,
		Tools:              Tools(s, reg),
		Methods:            Needs(s, reg),
		CongestionControls: s.CongestionControls(),
		Log:                bed.Logf(log, "ssh testbed: "),
	}
}

var _ testbed.Testbed = (*Testbed)(nil)
