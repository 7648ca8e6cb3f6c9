// Package runner applies a plan: for every step it builds the testbed, sets
// the method up, measures throughput, CPU and latency, records the cell in
// the store at once, and tears everything down again.
//
// A failing step is recorded as a failed cell (never as zero throughput)
// and the run goes on. When the context is cancelled (SIGINT, SIGTERM) the
// current step is torn down, the run is marked interrupted, and every cell
// already measured stays in the store.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// Store is where finished records go, each committed at once.
type Store interface {
	BeginRun(ctx context.Context, r *result.Run) error
	AddCell(ctx context.Context, c *result.Cell) (int64, error)
	FinishRun(ctx context.Context, id, status, errMsg string, finished time.Time) error
}

// Config is everything a run needs.
type Config struct {
	Scenario scenario.Scenario
	Methods  *method.Registry
	Store    Store
	Host     result.Host
	// Root holds run directories; testbed.DefaultRoot when empty.
	Root string
	// Progress receives the progress line; nil for none.
	Progress io.Writer
	// Live makes the progress line rewrite itself (a terminal).
	Live bool
	// ID is the run identifier; a fresh one when empty.
	ID string
	// BackgroundWindow is how long the idle machine is sampled before each
	// step; 500 ms when zero.
	BackgroundWindow time.Duration
	// Bed builds each cell's endpoints; the local namespace testbed
	// (localns.LocalTestbed with ID and Root) when nil.
	Bed testbed.Testbed
	// Resume, when set, continues this stored run (reopened by the
	// caller): steps whose cell and repetition are in Stored are skipped,
	// and no new run is begun. ID and Scenario must be the run's.
	Resume *result.Run
	Stored []result.Cell
	// Labels are stored with a new run (result.Run.Labels).
	Labels map[string]string
	// Catalog is the methods and testbeds the plan is built from (the
	// testbed registry's, internal/bed/registry: a testbed with sites
	// names the pairs each cell runs between); the methods alone, on
	// a testbed without sites, when nil.
	Catalog scenario.Catalog
}

func (cfg Config) catalog() scenario.Catalog {
	if cfg.Catalog != nil {
		return cfg.Catalog
	}
	return method.Catalog{R: cfg.Methods}
}

// Outcome is what a run produced.
type Outcome struct {
	Run   result.Run
	Cells []result.Cell
	// Wall is the run's wall time and Measured the sum of the load tools'
	// planned durations: Wall/Measured is the harness overhead.
	Wall, Measured time.Duration
}

// Run executes the scenario. The returned error is non-nil when the run
// could not start or was interrupted; failed cells are not errors.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if cfg.ID == "" {
		cfg.ID = testbed.NewID()
	}
	if cfg.Bed == nil {
		cfg.Bed = localns.LocalTestbed{ID: cfg.ID, Root: cfg.Root}
	}
	if cfg.BackgroundWindow == 0 {
		cfg.BackgroundWindow = 500 * time.Millisecond
	}
	// The catalog with the testbeds: a testbed with sites names the
	// pairs each cell runs between (scenario.Bed.Pairs).
	steps := plan.Build(cfg.Scenario, cfg.catalog())
	start := time.Now()
	run := result.Run{
		Schema:   result.SchemaVersion,
		ID:       cfg.ID,
		Started:  start.UTC(),
		Status:   result.RunRunning,
		Testbed:  cfg.Scenario.Testbed,
		Scenario: cfg.Scenario.YAML(),
		Host:     cfg.Host,
		Labels:   cfg.Labels,
	}
	out := &Outcome{}
	of := len(steps)
	if cfg.Resume != nil {
		run = *cfg.Resume
		steps = Remaining(steps, cfg.Stored)
		out.Cells = append(out.Cells, cfg.Stored...)
	} else if err := cfg.Store.BeginRun(ctx, &run); err != nil {
		return nil, fmt.Errorf("record run: %w", err)
	}
	prog := newProgress(cfg.Progress, cfg.Live, steps, of)
	var runErr error
	for _, st := range steps {
		if ctx.Err() != nil {
			runErr = fmt.Errorf("interrupted before step %d/%d: %w", st.Index, of, context.Cause(ctx))
			break
		}
		prog.begin(st)
		cell := runStep(ctx, cfg, run.ID, st, prog)
		// Record with a fresh context: an interrupt must not lose a
		// measurement that already finished.
		if _, err := cfg.Store.AddCell(context.WithoutCancel(ctx), &cell); err != nil {
			runErr = fmt.Errorf("record cell %s: %w", st.Key, err)
			break
		}
		out.Cells = append(out.Cells, cell)
		out.Measured += time.Duration(st.Measured() * float64(time.Second))
		prog.end(st, cell)
		if ctx.Err() != nil {
			runErr = fmt.Errorf("interrupted during step %d/%d: %w", st.Index, of, context.Cause(ctx))
			break
		}
	}
	prog.done()
	status, msg := result.RunDone, ""
	switch {
	case runErr != nil && ctx.Err() != nil:
		status, msg = result.RunInterrupted, runErr.Error()
	case runErr != nil:
		status, msg = result.RunFailed, runErr.Error()
	}
	finished := time.Now()
	out.Wall = finished.Sub(start)
	if err := cfg.Store.FinishRun(context.WithoutCancel(ctx), run.ID, status, msg, finished.UTC()); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("record end of run: %w", err))
	}
	run.Status, run.Error, run.Finished = status, msg, finished.UTC()
	out.Run = run
	return out, runErr
}

// Remaining drops the steps whose cell (key and repetition) is already
// stored, whatever its status: a resumed run measures every cell exactly
// once.
func Remaining(steps []plan.Step, stored []result.Cell) []plan.Step {
	done := make(map[string]bool, len(stored))
	for _, c := range stored {
		done[fmt.Sprintf("%s#%d", c.Key, c.Repetition)] = true
	}
	var out []plan.Step
	for _, st := range steps {
		if !done[fmt.Sprintf("%s#%d", st.Key, st.Repetition)] {
			out = append(out, st)
		}
	}
	return out
}
