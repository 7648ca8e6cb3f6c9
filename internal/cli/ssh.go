package cli

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/sshbed"
	"github.com/tunbench/tunbench/internal/sshhost"
	"github.com/tunbench/tunbench/internal/testbed"
)

// sshTools lists what every host of an ssh run needs: the load tools of
// the scenario's tests and the programs of its methods.
func sshTools(s scenario.Scenario, reg *method.Registry) []sshhost.Tool {
	tools := []sshhost.Tool{{Program: "iperf3"}}
	if s.LatencyTool == "sockperf" && s.HasTest(scenario.TestTCPRR) {
		tools = append(tools, sshhost.Tool{Program: "sockperf"})
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
			t := sshhost.Tool{Program: r.Program, Package: r.Package, Install: r.Install}
			if !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
	}
	return tools
}

// sshMethods are the scenario's methods and their requirements, which the
// ssh testbed checks on every host (their kernel options against the
// host's own kernel) before anything is created there.
func sshMethods(s scenario.Scenario, reg *method.Registry) []sshbed.MethodNeeds {
	var out []sshbed.MethodNeeds
	for _, name := range s.Methods {
		if m, err := reg.Get(name); err == nil {
			out = append(out, sshbed.MethodNeeds{Name: name, Requirements: m.Requirements()})
		}
	}
	return out
}

// sshConfig is the ssh testbed configuration of scenario s for run id.
func sshConfig(s scenario.Scenario, reg *method.Registry, id string, log io.Writer) sshbed.Config {
	// Each host's underlay carries an address of every family the
	// methods need there (srv6: IPv6, whatever it carries).
	fams, _ := s.UnderlayFamilies(runner.Catalog(reg))
	if len(fams) == 0 {
		fams = s.Families
	}
	return sshbed.Config{
		SSH: s.SSH, Families: fams, MTUs: s.MTUs, Offloads: s.Offloads,
		ID: id, BuildID: BuildID(), Version: Version(),
		Tools:              sshTools(s, reg),
		Methods:            sshMethods(s, reg),
		CongestionControls: s.CongestionControls(),
		Log: func(format string, args ...any) {
			if log != nil {
				fmt.Fprintf(log, "ssh testbed: "+format+"\n", args...)
			}
		},
	}
}

// openSSH connects to the scenario's hosts for run id.
func openSSH(ctx context.Context, s scenario.Scenario, reg *method.Registry, id string, log io.Writer) (*sshbed.Testbed, error) {
	tb, err := sshbed.Open(ctx, sshConfig(s, reg, id, log))
	if err != nil {
		return nil, fmt.Errorf("ssh testbed:\n%w", indent(err))
	}
	return tb, nil
}

var _ testbed.Testbed = (*sshbed.Testbed)(nil)
