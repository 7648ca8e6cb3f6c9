// Package local is the default testbed: for each cell two network
// namespaces on this machine joined by a veth pair
// (localns.LocalTestbed). This machine is checked before the run
// (bed.PreflightHere), and "tunbench clean" removes what killed runs left
// here.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/bed/kind"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/agent"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// Entry is the local testbed.
var Entry = bed.Entry{
	Kind: kind.Kind{
		Name:        "local",
		Description: "two network namespaces on this machine joined by a veth pair",
		Default:     true,
		Local:       true,
		Class:       scenario.TestbedOneMachine,
	},
	Preflight: func(s scenario.Scenario, reg *method.Registry, env bed.Env) error {
		return bed.PreflightHere(s, reg, env, true)
	},
	Unavailable: func(s scenario.Scenario, reg *method.Registry, env bed.Env) []scenario.SkippedMethod {
		return bed.UnavailableHere(s, reg, env.Probe(), true)
	},
	Open: func(_ context.Context, _ scenario.Scenario, _ *method.Registry, _ bed.Env, id string, _ io.Writer) (testbed.Testbed, error) {
		return localns.LocalTestbed{ID: id}, nil
	},
	Clean: clean,
}

// clean cleans this machine: what killed runs left (localns.Clean), or,
// with Run and Site, this host as that site of that run.
func clean(_ context.Context, c bed.CleanJob, _ bed.Env) ([]string, error) {
	if c.Site != "" || c.Run != "" {
		if c.Site == "" || c.Run == "" {
			return nil, errors.New("--run and --site go together: clean this host as site NAME of run ID")
		}
		removed, err := agent.CleanSite("", c.Run, c.Site)
		return removedLines(removed), wrapClean(err)
	}
	removed, err := localns.Clean("")
	return removedLines(removed), wrapClean(err)
}

func removedLines(removed []testbed.Leftover) []string {
	if len(removed) == 0 {
		return []string{"nothing to clean"}
	}
	lines := make([]string, len(removed))
	for i, r := range removed {
		lines[i] = fmt.Sprintf("removed %s", r)
	}
	return lines
}

func wrapClean(err error) error {
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	return nil
}
