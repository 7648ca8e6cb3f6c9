package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"

	"github.com/tunbench/tunbench/internal/kubebed"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// kubeDial, when set, opens the connections to API servers (tests reach
// a cluster inside network namespaces this way); nil dials directly.
var kubeDial func(ctx context.Context, network, addr string) (net.Conn, error)

// kubeConfig is the kubernetes testbed configuration of scenario s for
// run id.
func kubeConfig(s scenario.Scenario, reg *method.Registry, id string, log io.Writer) kubebed.Config {
	under, by := s.UnderlayFamilies(runner.Catalog(reg))
	return kubebed.Config{
		Kube: s.Kubernetes, Families: s.Families, Underlay: under, UnderlayBy: by, MTUs: s.MTUs,
		ID: id, BuildID: BuildID(), Version: Version(),
		Tools:              sshTools(s, reg),
		Methods:            sshMethods(s, reg),
		CongestionControls: s.CongestionControls(),
		PodNetwork:         placesInPods(s, reg),
		Dial:               kubeDial,
		Log: func(format string, args ...any) {
			if log != nil {
				fmt.Fprintf(log, "kubernetes testbed: "+format+"\n", args...)
			}
		},
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

// openKube creates the run's pods on the scenario's nodes and starts
// their agents.
func openKube(ctx context.Context, s scenario.Scenario, reg *method.Registry, id string, log io.Writer) (*kubebed.Testbed, error) {
	tb, err := kubebed.Open(ctx, kubeConfig(s, reg, id, log))
	if err != nil {
		return nil, fmt.Errorf("kubernetes testbed:\n%w", indent(err))
	}
	return tb, nil
}

// openRemote opens the testbed of a run whose endpoints are other
// machines (scenario.Remote).
func openRemote(ctx context.Context, s scenario.Scenario, reg *method.Registry, id string, log io.Writer) (testbed.Testbed, error) {
	if s.Testbed == "kubernetes" {
		return openKube(ctx, s, reg, id, log)
	}
	return openSSH(ctx, s, reg, id, log)
}

// cleanKube cleans what runs left in the scenario's cluster
// (kubebed.Clean).
func cleanKube(ctx context.Context, s scenario.Scenario, reg *method.Registry, id string) ([]string, error) {
	return kubebed.Clean(ctx, kubeConfig(s, reg, id, nil), id)
}

var _ testbed.Testbed = (*kubebed.Testbed)(nil)
