package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// dialect is what differs between the two databases a store can live in:
// SQLite (a file) and PostgreSQL (a server). Every query is written once,
// with ? placeholders; the dialect rebinds them.
type dialect struct {
	name string
	// driver is the database/sql driver name.
	driver string
	// numbered says placeholders are $1, $2... rather than ?.
	numbered bool
	// ddl picks a migration's text for this dialect.
	ddl func(migration) string
	// versionTable creates the schema_version table if it is missing.
	versionTable string
	// lock, when set, is run first in every migration transaction so that
	// concurrent openers of a fresh database migrate one at a time.
	lock string
}

var (
	sqliteDialect = &dialect{
		name: "sqlite", driver: "sqlite",
		ddl:          func(m migration) string { return m.sqlite },
		versionTable: `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT`,
	}
	postgresDialect = &dialect{
		name: "postgres", driver: "pgx", numbered: true,
		ddl:          func(m migration) string { return m.postgres },
		versionTable: `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`,
		// An arbitrary constant key: tunbench's migrations, database-wide.
		lock: `SELECT pg_advisory_xact_lock(7457366174627891)`,
	}
)

// rebind rewrites ? placeholders as $1, $2... for PostgreSQL. Queries in
// this package never carry a literal question mark.
func (d *dialect) rebind(q string) string {
	if !d.numbered || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Location is where a store lives, as --db or TUNBENCH_DB name it.
type Location struct {
	// Postgres is true for a PostgreSQL URL, false for a SQLite file.
	Postgres bool
	// Value is the file path or the URL as given.
	Value string
}

// EnvDB names the environment variable that picks the results database
// when --db is not given.
const EnvDB = "TUNBENCH_DB"

// AcceptedForms lists what --db and TUNBENCH_DB accept, for errors and
// help texts.
const AcceptedForms = "a SQLite file path (results.db, /srv/tunbench/results.db; ./NAME for a file whose name has a colon) " +
	"or a PostgreSQL URL (postgres://USER@HOST:PORT/DATABASE, also postgresql://; " +
	"host=/run/postgresql as a query parameter for a unix socket)"

// schemeRE matches a leading URL scheme ("postgres:", "mysql://").
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// ErrBadLocation means a --db or TUNBENCH_DB value is neither a file path
// nor a supported URL.
var ErrBadLocation = errors.New("not a results database location")

// ParseLocation reads a --db or TUNBENCH_DB value: a PostgreSQL URL
// (postgres:// or postgresql://, with a host or a host= parameter and a
// database), or a file path. A value that starts like a URL with any
// other scheme, or a malformed PostgreSQL URL, is refused, naming the
// accepted forms, before anything is created.
func ParseLocation(v string) (Location, error) {
	if strings.TrimSpace(v) == "" {
		return Location{}, fmt.Errorf("empty value: %w; use %s", ErrBadLocation, AcceptedForms)
	}
	scheme := schemeRE.FindString(v)
	if scheme == "" {
		return Location{Value: v}, nil
	}
	s := strings.ToLower(strings.TrimSuffix(scheme, ":"))
	if s != "postgres" && s != "postgresql" {
		return Location{}, fmt.Errorf("%q: %w: scheme %q is not supported; use %s", redact(v), ErrBadLocation, s+":", AcceptedForms)
	}
	u, err := url.Parse(v)
	if err != nil || !strings.HasPrefix(v[len(scheme):], "//") {
		return Location{}, fmt.Errorf("%q: %w: a malformed PostgreSQL URL; use %s", redact(v), ErrBadLocation, AcceptedForms)
	}
	if u.Host == "" && u.Query().Get("host") == "" {
		return Location{}, fmt.Errorf("%q: %w: the URL names no host; use %s", redact(v), ErrBadLocation, AcceptedForms)
	}
	if strings.Trim(u.Path, "/") == "" {
		return Location{}, fmt.Errorf("%q: %w: the URL names no database (postgres://HOST/DATABASE); use %s", redact(v), ErrBadLocation, AcceptedForms)
	}
	return Location{Postgres: true, Value: v}, nil
}

// redact hides a URL's password, for messages and logs.
func redact(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		if i := strings.Index(v, "@"); i >= 0 && strings.Contains(v[:i], "://") {
			return v[:strings.Index(v, "://")+3] + "REDACTED" + v[i:]
		}
		return v
	}
	return u.Redacted()
}

// DefaultDB is the database a command uses without --db: TUNBENCH_DB
// when set, else DefaultPath.
func DefaultDB() string {
	if v := strings.TrimSpace(os.Getenv(EnvDB)); v != "" {
		return v
	}
	return DefaultPath()
}

// openPostgres connects to the PostgreSQL database at rawURL and brings
// its schema up to date. The database must exist; tunbench creates its
// tables in it.
func openPostgres(ctx context.Context, rawURL string) (*Store, error) {
	name := redact(rawURL)
	db, err := sql.Open(postgresDialect.driver, rawURL)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	s := &Store{db: db, path: name, d: postgresDialect}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", name, err)
	}
	return s, nil
}

// Postgres reports whether the store is a PostgreSQL database (else a
// SQLite file).
func (s *Store) Postgres() bool { return s.d == postgresDialect }

// q rebinds a query for the store's dialect.
func (s *Store) q(query string) string { return s.d.rebind(query) }
