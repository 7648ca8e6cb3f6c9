package bed

import (
	"context"
	"fmt"
	"github.com/tunbench/tunbench/internal/bed/kind"
	"io"
	"slices"

	"github.com/tunbench/tunbench/internal/agentbed"
	"github.com/tunbench/tunbench/internal/kubebed"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// ssh runs on the hosts of the scenario's ssh section, each driven over
// SSH by an agent of this binary (agentbed).
var ssh = Entry{
	Kind:      kind.SSH,
	Scenario:  scenario.SSHBed,
	Preflight: remotePreflight,
	Open: func(ctx context.Context, s scenario.Scenario, reg *method.Registry, env Env, id string, log io.Writer) (testbed.Testbed, error) {
		tb, err := agentbed.Open(ctx, SSHConfig(s, reg, env, id, log))
		if err != nil {
			return nil, fmt.Errorf("ssh testbed:\n%w", indent(err))
		}
		return tb, nil
	},
	Clean: func(ctx context.Context, c CleanJob, env Env) ([]string, error) {
		lines, err := agentbed.Clean(ctx, SSHConfig(c.Scenario, c.Methods, env, c.Run, nil), c.Run)
		return lines, wrapRemoteClean(err)
	},
	OnEachSite: func(ctx context.Context, s scenario.Scenario, reg *method.Registry, env Env, argv []string) ([]string, error) {
		return agentbed.OnEachSite(ctx, SSHConfig(s, reg, env, "", nil), func(string) []string { return argv })
	},
}

// kubernetes runs on the nodes of the scenario's kubernetes section, in
// pods whose agents this binary drives through the API server (kubebed).
var kubernetes = Entry{
	Kind:      kind.Kubernetes,
	Scenario:  scenario.KubernetesBed,
	Preflight: remotePreflight,
	Open: func(ctx context.Context, s scenario.Scenario, reg *method.Registry, env Env, id string, log io.Writer) (testbed.Testbed, error) {
		tb, err := kubebed.Open(ctx, KubeConfig(s, reg, env, id, log))
		if err != nil {
			return nil, fmt.Errorf("kubernetes testbed:\n%w", indent(err))
		}
		return tb, nil
	},
	Clean: func(ctx context.Context, c CleanJob, env Env) ([]string, error) {
		lines, err := kubebed.Clean(ctx, KubeConfig(c.Scenario, c.Methods, env, c.Run, nil), c.Run)
		return lines, wrapRemoteClean(err)
	},
}

// remotePreflight asks nothing of this machine: it is only the
// controller, and each host is checked by its own kernel when the
// testbed opens, before anything is created on any host.
func remotePreflight(scenario.Scenario, *method.Registry, Env) error { return nil }

func wrapRemoteClean(err error) error {
	if err != nil {
		return fmt.Errorf("clean:\n%w", indent(err))
	}
	return nil
}

// tools lists what every host of a remote run needs: the load tools of
// the scenario's tests and the programs of its methods.
func tools(s scenario.Scenario, reg *method.Registry) []remotehost.Tool {
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

// methodNeeds are the scenario's methods and their requirements, which
// the remote testbeds check on every host (their kernel options against
// the host's own kernel) before anything is created there.
func methodNeeds(s scenario.Scenario, reg *method.Registry) []agentbed.MethodNeeds {
	var out []agentbed.MethodNeeds
	for _, name := range s.Methods {
		if m, err := reg.Get(name); err == nil {
			out = append(out, agentbed.MethodNeeds{Name: name, Requirements: m.Requirements()})
		}
	}
	return out
}

// SSHConfig is the ssh testbed configuration of scenario s for run id.
func SSHConfig(s scenario.Scenario, reg *method.Registry, env Env, id string, log io.Writer) agentbed.Config {
	// Each host's underlay carries an address of every family the
	// methods need there (srv6: IPv6, whatever it carries).
	fams, _ := s.UnderlayFamilies(Catalog(reg))
	if len(fams) == 0 {
		fams = s.Families
	}
	return agentbed.Config{
		SSH: s.SSH, Families: fams, MTUs: s.MTUs, Offloads: s.Offloads,
		ID: id, BuildID: env.BuildID(), Version: env.Version,
		Tools:              tools(s, reg),
		Methods:            methodNeeds(s, reg),
		CongestionControls: s.CongestionControls(),
		Log:                logf(log, "ssh testbed: "),
	}
}

// KubeConfig is the kubernetes testbed configuration of scenario s for
// run id.
func KubeConfig(s scenario.Scenario, reg *method.Registry, env Env, id string, log io.Writer) kubebed.Config {
	under, by := s.UnderlayFamilies(Catalog(reg))
	return kubebed.Config{
		Kube: s.Kubernetes, Families: s.Families, Underlay: under, UnderlayBy: by, MTUs: s.MTUs,
		ID: id, BuildID: env.BuildID(), Version: env.Version,
		Tools:              tools(s, reg),
		Methods:            methodNeeds(s, reg),
		CongestionControls: s.CongestionControls(),
		PodNetwork:         placesInPods(s, reg),
		Dial:               env.Dial,
		Log:                logf(log, "kubernetes testbed: "),
	}
}

// placesInPods reports whether a method of s runs in ordinary pods
// (method.Placer: testbed.NetworkPod).
func placesInPods(s scenario.Scenario, reg *method.Registry) bool {
	return slices.ContainsFunc(s.Methods, func(name string) bool {
		m, err := reg.Get(name)
		pl, ok := m.(method.Placer)
		return err == nil && ok && pl.Network() == testbed.NetworkPod
	})
}

var (
	_ testbed.Testbed = (*agentbed.Testbed)(nil)
	_ testbed.Testbed = (*kubebed.Testbed)(nil)
)
