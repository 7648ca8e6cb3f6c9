package kubernetes

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/bed/kind"
	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Entry is the kubernetes testbed: the nodes of the scenario's kubernetes
// section, in pods whose agents this binary drives through the API
// server.
var Entry = bed.Entry{
	Kind: kind.Kind{
		Name:        "kubernetes",
		Description: "the nodes of its kubernetes section, -f",
		Remote:      true,
	},
	Scenario:  scenario.Bed{Section: SectionKey, Check: check, Stray: stray, CheckRecover: checkRecover, Pairs: pairs},
	Preflight: preflight,
	Open: func(ctx context.Context, s scenario.Scenario, reg *method.Registry, env bed.Env, id string, log io.Writer) (testbed.Testbed, error) {
		tb, err := Open(ctx, ScenarioConfig(s, reg, env, id, log))
		if err != nil {
			return nil, fmt.Errorf("kubernetes testbed:\n%w", bed.Indent(err))
		}
		return tb, nil
	},
	Clean: func(ctx context.Context, c bed.CleanJob, env bed.Env) ([]string, error) {
		lines, err := Clean(ctx, ScenarioConfig(c.Scenario, c.Methods, env, c.Run, nil), c.Run)
		return lines, ssh.WrapClean(err)
	},
}

// preflight asks nothing of this machine, as on ssh hosts
// (ssh.RemotePreflight): each node is checked when the testbed opens.
func preflight(s scenario.Scenario, reg *method.Registry, env bed.Env) error {
	return ssh.RemotePreflight(s, reg, env)
}

// ScenarioConfig is the kubernetes testbed configuration of scenario s
// for run id.
func ScenarioConfig(s scenario.Scenario, reg *method.Registry, env bed.Env, id string, log io.Writer) Config {
	under, by := s.UnderlayFamilies(method.Catalog{R: reg})
	cluster, _ := FromScenario(s) // validation has decoded it
	return Config{
		Kube: cluster, Families: s.Families, Underlay: under, UnderlayBy: by, MTUs: s.MTUs,
		ID: id, BuildID: env.BuildID(), Version: env.Version,
		Tools:              ssh.Tools(s, reg),
		Methods:            ssh.Needs(s, reg),
		CongestionControls: s.CongestionControls(),
		PodNetwork:         placesInPods(s, reg),
		Dial:               env.Dial,
		Log:                bed.Logf(log, "kubernetes testbed: "),
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

var _ testbed.Testbed = (*Testbed)(nil)
