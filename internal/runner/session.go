package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
)

// SessionOptions say where a session keeps its records and how it talks.
type SessionOptions struct {
	// DB is the results database, a file or a postgres:// URL;
	// store.DefaultDB() when empty.
	DB string
	// Export is the JSON export's path; exports/<run id>.json beside the
	// database when empty.
	Export string
	// Progress receives the progress line (nil for none); Live makes it
	// rewrite itself.
	Progress io.Writer
	Live     bool
	// Notes receives what the session did on the side (leftovers of
	// killed runs removed, the kernel lab booting); nil discards.
	Notes io.Writer
	// Open opens the scenario's testbed under run id (its entry in the
	// testbed registry, internal/bed); nil opens the local namespaces.
	// The testbed is closed at the end of the run when it is an
	// io.Closer; a host left uncleaned then fails the run.
	Open func(ctx context.Context, s scenario.Scenario, id string) (testbed.Testbed, error)
	// Lab, when set, makes Run run the whole scenario in the kernel lab
	// (the vm testbed, RunVM).
	Lab *LabOptions
	// Labels are stored with a new run (result.Run.Labels).
	Labels map[string]string
}

// Session carries runs from the command line to the records: it opens the
// results database (refusing a read-only one before anything is created),
// removes what killed runs left, collects the host's metadata, opens the
// scenario's testbed, runs or resumes the plan, and writes the export.
// The command line only parses flags and prints what a session returns.
type Session struct {
	Store *store.Store
	// DBPath is the database's path.
	DBPath string
	opt    SessionOptions
}

// ExitCellsFailed is the exit status of "tunbench run" when it measured
// the whole matrix but a cell failed (a run in the kernel lab's guest
// ending so is no failure of the lab).
const ExitCellsFailed = 5

// Result is what a session's run produced and where its export is.
type Result struct {
	Run    result.Run
	Cells  []result.Cell
	Export string
	// Outcome is the runner's (nil for a run in the kernel lab, whose
	// timing is the guest's).
	Outcome *Outcome
	// Lab describes the kernel lab's boot, for a run on testbed vm.
	Lab *LabBoot
}

// LabOptions size the kernel lab's guest.
type LabOptions struct {
	// MemoryMiB is the guest's memory; the lab's default when zero.
	MemoryMiB int
}

// LabBoot is what the kernel lab reports of the guest a run used.
type LabBoot struct {
	Kernel   string
	BootTime float64 // seconds
	Emulated bool
}

// OpenSession opens the results database for writing.
func OpenSession(opt SessionOptions) (*Session, error) {
	path := opt.DB
	if path == "" {
		path = store.DefaultDB()
	}
	st, err := store.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open results database: %w", err)
	}
	if st.ReadOnly() {
		st.Close()
		return nil, fmt.Errorf("results database %s: %w", path, store.ErrReadOnly)
	}
	if st.Postgres() {
		path = st.Path() // the URL without its password, for messages
	}
	return &Session{Store: st, DBPath: path, opt: opt}, nil
}

// Close closes the database.
func (s *Session) Close() error { return s.Store.Close() }

func (s *Session) notef(format string, args ...any) {
	if s.opt.Notes != nil {
		fmt.Fprintf(s.opt.Notes, format+"\n", args...)
	}
}

// Stored returns a stored run, its cells and its scenario, validated
// against reg, for a resume: the same scenario, the same run id, only
// the cells the database lacks.
func (s *Session) Stored(ctx context.Context, id string, reg *method.Registry) (result.Run, []result.Cell, scenario.Scenario, error) {
	run, cells, err := s.Store.Run(ctx, id)
	if err != nil {
		return run, nil, scenario.Scenario{}, fmt.Errorf("resume: %w", err)
	}
	sc, err := scenario.Parse([]byte(run.Scenario))
	if err != nil {
		return run, nil, sc, fmt.Errorf("resume run %s: stored scenario: %w", run.ID, err)
	}
	if err := sc.Validate(Catalog(reg)); err != nil {
		return run, nil, sc, fmt.Errorf("resume run %s: stored scenario is not valid for this tunbench:\n%w", run.ID, err)
	}
	return run, cells, sc, nil
}

// Run measures sc as a new run on the testbed Open opens, or in the
// kernel lab with Lab (RunVM).
func (s *Session) Run(ctx context.Context, sc scenario.Scenario, reg *method.Registry) (*Result, error) {
	if s.opt.Lab != nil {
		return s.RunVM(ctx, sc, reg, s.opt.Lab.MemoryMiB)
	}
	return s.measure(ctx, Config{Scenario: sc, Methods: reg, Labels: s.opt.Labels})
}

// Resume continues stored run id: only the cells the database lacks are
// measured, and the run is marked done at the end.
func (s *Session) Resume(ctx context.Context, id string, reg *method.Registry) (*Result, error) {
	run, _, sc, err := s.Stored(ctx, id, reg)
	if err != nil {
		return nil, err
	}
	run, stored, err := s.Store.ReopenRun(ctx, run.ID)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	return s.measure(ctx, Config{Scenario: sc, Methods: reg, ID: run.ID, Resume: &run, Stored: stored})
}

// measure prepares the machine and the testbed for cfg, runs it and
// writes the export. A run that measured something returns its Result
// even with an error (a failure mid-run keeps every result already
// measured).
func (s *Session) measure(ctx context.Context, cfg Config) (res *Result, err error) {
	// Leftovers of killed runs would collide with nothing (names are per
	// run) but must not accumulate.
	removed, err := testbed.Clean("")
	if err != nil {
		return nil, fmt.Errorf("clean leftovers of earlier runs: %w", err)
	}
	if len(removed) > 0 {
		s.notef("removed leftovers of a killed run: %v", removed)
	}
	host, err := hostinfo.Collect(ctx, hostinfo.ExecRunner{})
	if err != nil {
		return nil, fmt.Errorf("collect host metadata: %w", err)
	}
	cfg.Store, cfg.Host = s.Store, host
	cfg.Progress, cfg.Live = s.opt.Progress, s.opt.Live
	// Inside the kernel lab this run is the guest half of --testbed vm.
	if os.Getenv(lab.EnvInLab) == "1" {
		cfg.Testbed = "vm"
		cfg.Host.Emulated = cfg.Host.Emulated || os.Getenv(lab.EnvEmulated) == "1"
	}
	if s.opt.Open != nil {
		if cfg.ID == "" {
			// The hosts' objects carry the run's id from the start.
			cfg.ID = testbed.NewID()
		}
		tb, openErr := s.opt.Open(ctx, cfg.Scenario, cfg.ID)
		if openErr != nil {
			return nil, openErr
		}
		cfg.Bed = tb
		if c, ok := tb.(io.Closer); ok {
			// Joined into the named result: a host left uncleaned fails
			// the command.
			defer func() { err = errors.Join(err, c.Close()) }()
		}
	}
	out, runErr := Run(ctx, cfg)
	if out == nil {
		return nil, runErr
	}
	res = &Result{Run: out.Run, Cells: out.Cells, Outcome: out, Export: s.exportPath(out.Run.ID)}
	if err := writeExport(res.Export, out.Run, out.Cells); err != nil {
		return res, errors.Join(runErr, err)
	}
	return res, runErr
}

func (s *Session) exportPath(id string) string {
	if s.opt.Export != "" {
		return s.opt.Export
	}
	if s.Store.Postgres() {
		// A database on a server has no directory: beside the default file.
		return filepath.Join(filepath.Dir(store.DefaultPath()), "exports", id+".json")
	}
	return filepath.Join(filepath.Dir(s.DBPath), "exports", id+".json")
}

// writeExport writes a run's JSON export (docs/results.md).
func writeExport(path string, run result.Run, cells []result.Cell) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write export: %w", err)
	}
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write export: %w", err)
	}
	if err := export.JSON(fh, run, cells); err != nil {
		fh.Close()
		return fmt.Errorf("write export %s: %w", path, err)
	}
	return fh.Close()
}
