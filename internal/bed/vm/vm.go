// Package vm is the kernel lab testbed: the whole run happens in a stock
// kernel booted under qemu with this machine's root file system, running
// the scenario on its own local testbed (docs/kernel-lab.md). The guest
// kernel is not this one: only programs (shared through the root file
// system) are checked here, and the guest's own run checks its kernel
// (InGuest). Open boots the guest (lab.go); the session hands it the
// whole run (runner.Delegate).
// Only this testbed boots a kernel: the scenario's kernel field belongs
// to it.
package vm

import (
	"context"
	"errors"
	"io"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/bed/kind"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Entry is the vm testbed.
var Entry = bed.Entry{
	Kind: kind.Kind{
		Name:        "vm",
		Description: "the kernel lab",
		Lab:         true,
		Class:       scenario.TestbedLocalVM,
	},
	Scenario: scenario.Bed{Stray: stray},
	Preflight: func(s scenario.Scenario, reg *method.Registry, env bed.Env) error {
		return bed.PreflightHere(s, reg, env, InGuest())
	},
	Unavailable: func(s scenario.Scenario, reg *method.Registry, env bed.Env) []scenario.SkippedMethod {
		return bed.UnavailableHere(s, reg, env.Probe(), InGuest())
	},
	Open: func(ctx context.Context, s scenario.Scenario, reg *method.Registry, env bed.Env, id string, _ io.Writer) (testbed.Testbed, error) {
		return Open(ctx, s, reg, Guest{MemoryMiB: env.LabMemoryMiB, Timeout: env.LabTimeout}, id)
	},
}

// stray refuses a kernel to boot on another testbed.
func stray(s scenario.Scenario) error {
	if s.Kernel == "" {
		return nil
	}
	return errors.New("kernel: a kernel is only booted by testbed vm: set testbed: vm or drop kernel")
}
