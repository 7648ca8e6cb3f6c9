// Package store keeps result records (result.Run and result.Cell) in a
// SQLite database, using the pure-Go modernc.org/sqlite driver (no cgo),
// or in a PostgreSQL database, using pgx's database/sql driver: one code
// path over database/sql, with a small dialect (placeholders, column
// types, migration locking) between them, and the same schema and
// migrations on both.
//
// Contract:
//   - Open takes a file path or a postgres:// URL (ParseLocation); any
//     other URL is refused before anything is created. For a file it
//     creates the file and its parent directories if needed, turns on
//     WAL journaling, foreign keys and a busy timeout; on both it applies
//     schema migrations. A database written by a newer tunbench is
//     refused.
//   - Every write (BeginRun, FinishRun, AddCell) is its own committed
//     transaction. A crash or kill loses at most the write in progress;
//     every cell added before it survives, and its run keeps status
//     "running" until FinishRun is called.
//   - Each table has indexed columns for querying plus, for cells, the full
//     record as JSON, so nothing measured is lost: a Cell read back is equal
//     to the Cell that was added.
//   - Times are stored as fixed-width UTC RFC 3339 text with nanoseconds, so
//     they sort as text and read well in the sqlite3 shell.
//
// A *Store is safe for concurrent use by multiple goroutines. Several
// processes may open the same file; writers wait up to the busy timeout.
// Many processes, on many machines, may write to one PostgreSQL database
// at once: each cell is its own row, written in its own transaction.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// BusyTimeout is how long a write waits for another connection or process
// holding the database lock before it fails.
const BusyTimeout = 10 * time.Second

// Sentinel errors returned (wrapped) by lookups.
var (
	// ErrNotFound means no run matches the requested id or prefix.
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous means a prefix matches more than one run.
	ErrAmbiguous = errors.New("ambiguous run id prefix")
	// ErrReadOnly means the database is on a read-only file system: it can
	// be read, not written.
	ErrReadOnly = errors.New("the file system is read-only: remount it read-write, or give --db a database on a writable disk")
)

// Latest is the run id that Run resolves to the most recently started run.
const Latest = "latest"

// Store is an open results database.
type Store struct {
	db       *sql.DB
	path     string
	readOnly bool
	d        *dialect
}

// DefaultPath returns where results are kept unless told otherwise:
// $XDG_DATA_HOME/tunbench/results.db, else ~/.local/share/tunbench/results.db
// (for root: /root/.local/share/tunbench/results.db). If the home directory
// cannot be determined it returns results.db in the current directory.
func DefaultPath() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "tunbench", "results.db")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "results.db"
	}
	return filepath.Join(home, ".local", "share", "tunbench", "results.db")
}

// Open opens the database at path, a SQLite file (created if needed) or a
// PostgreSQL URL (ParseLocation), and brings its schema up to date.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	loc, err := ParseLocation(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if loc.Postgres {
		return openPostgres(context.Background(), loc.Value)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if unix.Access(filepath.Dir(abs), unix.W_OK) == unix.EROFS {
		return openReadOnly(path, abs)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// One connection: writes are serialised inside the process, and the
	// busy timeout handles other processes.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: abs, d: sqliteDialect}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// openReadOnly opens a database on a read-only file system for reading:
// results stay readable (reports, exports) when a disk was remounted
// read-only, and every write fails with ErrReadOnly.
func openReadOnly(path, abs string) (*Store, error) {
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("open store %s: cannot create it: %w", path, ErrReadOnly)
	}
	// immutable: SQLite neither locks nor writes the -shm file it could
	// not create here.
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?mode=ro&immutable=1")
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: abs, readOnly: true, d: sqliteDialect}
	v, err := schemaVersion(context.Background(), db)
	if err == nil && v != len(migrations) {
		err = fmt.Errorf("schema version %d needs migrating to %d, which a read-only file system does not allow", v, len(migrations))
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// ReadOnly reports whether the store can only be read (ErrReadOnly).
func (s *Store) ReadOnly() bool { return s.readOnly }

// writable fails with ErrReadOnly on a read-only store.
func (s *Store) writable() error {
	if s.readOnly {
		return fmt.Errorf("store %s: %w", s.path, ErrReadOnly)
	}
	return nil
}

// dsn builds a SQLite URI for abs with the connection settings every
// connection needs.
func dsn(abs string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
}

// Path returns the absolute path of the database file, or the URL of a
// PostgreSQL database with its password redacted.
func (s *Store) Path() string { return s.path }

// Close closes the database. Records already added are on disk whether or
// not Close is called.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// timeFormat is fixed-width so that stored times sort as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// formatTime returns t as stored text, or NULL for the zero time.
func formatTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeFormat)
}

// parseTime reads a stored time; NULL gives the zero time.
func parseTime(v sql.NullString) (time.Time, error) {
	if !v.Valid || v.String == "" {
		return time.Time{}, nil
	}
	if t, ok := parseStoredTime(v.String); ok {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse stored time %q: %w", v.String, err)
	}
	return t, nil
}

// parseStoredTime reads a time as this package writes it (timeFormat in
// UTC: 2025-03-14T09:26:53.589793238Z) without time.Parse's generality,
// which trend reads pay for every run; ok is false for any other text,
// which time.Parse then reads. The result equals time.Parse's.
func parseStoredTime(v string) (time.Time, bool) {
	const layout = "0000-00-00T00:00:00.000000000Z"
	if len(v) != len(layout) {
		return time.Time{}, false
	}
	var n [7]int // year, month, day, hour, minute, second, nanosecond
	field := 0
	for i := range len(layout) {
		c := v[i]
		if layout[i] != '0' {
			if c != layout[i] {
				return time.Time{}, false
			}
			field++
			continue
		}
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
		n[field] = n[field]*10 + int(c-'0')
	}
	if n[1] < 1 || n[1] > 12 || n[2] < 1 || n[2] > 31 || n[3] > 23 || n[4] > 59 || n[5] > 59 {
		return time.Time{}, false
	}
	t := time.Date(n[0], time.Month(n[1]), n[2], n[3], n[4], n[5], n[6], time.UTC)
	if t.Day() != n[2] { // 31 February: time.Parse refuses it
		return time.Time{}, false
	}
	return t, true
}
