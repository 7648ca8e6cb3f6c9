package runner

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// SessionOptions say where a session keeps its records and how it talks.
type SessionOptions struct {
	// DB is the results database, a file or a postgres:// URL;
	// store.DefaultDB() when empty.
	DB string
	// Catalog is the methods and testbeds a stored scenario is validated
	// against for a resume (the testbed registry's, internal/bed); the
	// methods alone, checking no testbed, when nil.
	Catalog scenario.Catalog
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
	// io.Closer; a host left uncleaned then fails the run. A testbed
	// that runs the whole plan elsewhere is a Delegate.
	Open func(ctx context.Context, s scenario.Scenario, id string) (testbed.Testbed, error)
	// Labels are stored with a new run (result.Run.Labels).
	Labels map[string]string
}

// Delegate is a testbed that runs the whole plan elsewhere and brings
// its records back (the vm testbed: the kernel lab's guest runs the
// scenario there). The session hands it the scenario and its database
// instead of running the plan here.
type Delegate interface {
	testbed.Testbed
	// RunWhole runs sc where the testbed lives, its records carrying
	// labels, imports every record it stored there into db (also when
	// the run failed there), and says which run that was. notes receives
	// what it does on the way (nil discards).
	RunWhole(ctx context.Context, sc scenario.Scenario, labels map[string]string, db Importer, notes io.Writer) (Delegated, error)
}

// Importer takes in the records of a results database stored elsewhere
// (store.Store.ImportFile).
type Importer interface {
	ImportFile(ctx context.Context, path string) (store.ImportStats, error)
}

// Delegated is what a Delegate's run left.
type Delegated struct {
	// RunID is the run imported into the session's database.
	RunID string
	// Export is the run's JSON export as written where it ran.
	Export []byte
	// Where says where and how it ran, for the closing line: "in the
	// kernel lab (kernel 6.12.1, boot 5.2 s, emulated true)".
	Where string
}

// Emulator is a testbed that knows whether its endpoints run under
// software emulation whatever this machine's class says (the kernel
// lab's guest is told by the lab); the run records Host.Emulated then.
type Emulator interface {
	Emulated() bool
}

// Session carries runs from the command line to the records: it opens the
// results database (refusing a read-only one before anything is created),
// removes what killed runs left, opens the scenario's testbed, collects
// the host's metadata, and runs or resumes the plan (or has a Delegate
// run it). The command line only parses flags, writes the export and
// prints what a session returns.
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

// Result is what a session's run produced.
type Result struct {
	Run   result.Run
	Cells []result.Cell
	// Outcome is the runner's (nil for a run a Delegate ran elsewhere,
	// whose timing is not this machine's).
	Outcome *Outcome
	// Export is the run's JSON export as written where a Delegate ran it;
	// nil when the caller writes it from Run and Cells.
	Export []byte
	// Where says where a Delegate ran the run ("in the kernel lab (...)");
	// "" for a run measured here.
	Where string
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
	cat := s.opt.Catalog
	if cat == nil {
		cat = method.Catalog{R: reg}
	}
	if err := sc.Validate(cat); err != nil {
		return run, nil, sc, fmt.Errorf("resume run %s: stored scenario is not valid for this tunbench:\n%w", run.ID, err)
	}
	return run, cells, sc, nil
}

// Run measures sc as a new run on the testbed Open opens.
func (s *Session) Run(ctx context.Context, sc scenario.Scenario, reg *method.Registry) (*Result, error) {
	return s.measure(ctx, Config{Scenario: sc, Methods: reg, Labels: s.opt.Labels, Catalog: s.opt.Catalog})
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
	return s.measure(ctx, Config{Scenario: sc, Methods: reg, ID: run.ID, Resume: &run, Stored: stored, Catalog: s.opt.Catalog})
}

// measure prepares the machine and the testbed for cfg and runs it, or
// has the testbed run it when it is a Delegate. A run that measured
// something returns its Result even with an error (a failure mid-run
// keeps every result already measured).
func (s *Session) measure(ctx context.Context, cfg Config) (res *Result, err error) {
	// Leftovers of killed runs would collide with nothing (names are per
	// run) but must not accumulate.
	removed, err := localns.Clean("")
	if err != nil {
		return nil, fmt.Errorf("clean leftovers of earlier runs: %w", err)
	}
	if len(removed) > 0 {
		s.notef("removed leftovers of a killed run: %v", removed)
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
	if d, ok := cfg.Bed.(Delegate); ok {
		return s.delegate(ctx, d, cfg)
	}
	host, err := hostinfo.Collect(ctx, hostinfo.ExecRunner{})
	if err != nil {
		return nil, fmt.Errorf("collect host metadata: %w", err)
	}
	if e, ok := cfg.Bed.(Emulator); ok && e.Emulated() {
		host.Emulated = true
	}
	cfg.Store, cfg.Host = s.Store, host
	cfg.Progress, cfg.Live = s.opt.Progress, s.opt.Live
	out, runErr := Run(ctx, cfg)
	if out == nil {
		return nil, runErr
	}
	return &Result{Run: out.Run, Cells: out.Cells, Outcome: out}, runErr
}

// delegate has d run cfg's whole plan and returns the run it imported.
func (s *Session) delegate(ctx context.Context, d Delegate, cfg Config) (*Result, error) {
	if cfg.Resume != nil {
		return nil, fmt.Errorf("resume run %s: the %s testbed runs the whole plan elsewhere and cannot resume one; start a new run", cfg.Resume.ID, d.Name())
	}
	out, err := d.RunWhole(ctx, cfg.Scenario, cfg.Labels, s.Store, s.opt.Notes)
	if err != nil {
		return nil, err
	}
	run, cells, err := s.Store.Run(ctx, out.RunID)
	if err != nil {
		return nil, err
	}
	return &Result{Run: run, Cells: cells, Export: out.Export, Where: out.Where}, nil
}
