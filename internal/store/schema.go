package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// migrations[i] brings the schema from version i to version i+1. Append
// only: never edit a migration that has been released.
var migrations = []string{
	// Version 1.
	`
CREATE TABLE runs (
	id       TEXT PRIMARY KEY,
	schema   TEXT NOT NULL,
	started  TEXT NOT NULL,
	finished TEXT,
	status   TEXT NOT NULL,
	error    TEXT NOT NULL DEFAULT '',
	testbed  TEXT NOT NULL DEFAULT '',
	scenario TEXT NOT NULL DEFAULT '',
	host     TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX runs_started ON runs (started);

CREATE TABLE cells (
	id             INTEGER PRIMARY KEY,
	run_id         TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key            TEXT NOT NULL,
	method         TEXT NOT NULL,
	implementation TEXT NOT NULL DEFAULT '',
	repetition     INTEGER NOT NULL,
	status         TEXT NOT NULL,
	error          TEXT NOT NULL DEFAULT '',
	started        TEXT,
	finished       TEXT,
	record         TEXT NOT NULL
) STRICT;
CREATE INDEX cells_run ON cells (run_id, key, repetition);
CREATE INDEX cells_method ON cells (method, implementation);
`,
	// Version 2: trends (tunbench trend, serve, Grafana). Self-contained,
	// and written in SQL that SQLite and PostgreSQL both take (no STRICT,
	// JSON read with -> and ->>, which on PostgreSQL needs the record and
	// host columns as json or jsonb).
	trendMigration,
}

// trendMigration adds the acknowledged change points, the change points
// "tunbench trend --record" found (the Grafana dashboard's annotations),
// and the measured_values view: one row per measured value with a time
// column (docs/results.md).
var trendMigration = `
CREATE TABLE change_acks (
	change_id TEXT PRIMARY KEY,
	acked     TEXT NOT NULL,
	note      TEXT NOT NULL DEFAULT ''
);

CREATE TABLE change_points (
	change_id      TEXT PRIMARY KEY,
	time           TEXT NOT NULL,
	series         TEXT NOT NULL,
	key            TEXT NOT NULL,
	metric         TEXT NOT NULL,
	machine        TEXT NOT NULL,
	testbed        TEXT NOT NULL,
	last_run       TEXT NOT NULL,
	first_run      TEXT NOT NULL,
	before_value   DOUBLE PRECISION NOT NULL,
	after_value    DOUBLE PRECISION NOT NULL,
	change_percent DOUBLE PRECISION NOT NULL,
	p              DOUBLE PRECISION NOT NULL,
	regression     INTEGER NOT NULL,
	summary        TEXT NOT NULL
);
CREATE INDEX change_points_time ON change_points (time);

CREATE VIEW measured_values AS
` + measuredValuesSelect() + `;
`

// measuredValuesSelect is the view's query: one SELECT per figure, joined
// with UNION ALL. The list is part of migration 2: never change it; a new
// figure is a new migration that replaces the view.
func measuredValuesSelect() string {
	figures := []struct{ metric, unit, object, field string }{
		{"throughput", "bit/s", "throughput", "bits_per_second_bps"},
		{"sender_throughput", "bit/s", "throughput", "sender_bits_per_second_bps"},
		{"retransmits", "count", "throughput", "retransmits"},
		{"min_rtt", "us", "latency", "min_rtt_us"},
		{"mean_rtt", "us", "latency", "mean_rtt_us"},
		{"p50_rtt", "us", "latency", "p50_rtt_us"},
		{"p90_rtt", "us", "latency", "p90_rtt_us"},
		{"p99_rtt", "us", "latency", "p99_rtt_us"},
		{"max_rtt", "us", "latency", "max_rtt_us"},
		{"sender_cpu", "cores", "cpu", "sender_cores"},
		{"receiver_cpu", "cores", "cpu", "receiver_cores"},
		{"busy_avg", "percent", "cpu", "busy_avg_percent"},
	}
	var q []string
	for _, f := range figures {
		q = append(q, `SELECT r.started AS time, r.id AS run_id, r.testbed AS testbed,
	(r.host ->> 'hostname') AS machine, (r.host ->> 'kernel') AS kernel,
	c.key AS key, c.method AS method, c.repetition AS repetition,
	CAST((c.record -> 'meta' ->> 'background_busy_percent') AS DOUBLE PRECISION) AS background_busy_percent,
	'`+f.metric+`' AS metric, '`+f.unit+`' AS unit,
	CAST((c.record -> '`+f.object+`' ->> '`+f.field+`') AS DOUBLE PRECISION) AS value
FROM cells c JOIN runs r ON r.id = c.run_id
WHERE c.status = 'ok' AND (c.record -> '`+f.object+`' ->> '`+f.field+`') IS NOT NULL`)
	}
	return strings.Join(q, "\nUNION ALL\n")
}

// SchemaVersion is the database schema version this package writes; it
// equals len(migrations).
const SchemaVersion = 2

// migrate applies the migrations the database has not seen yet, each in its
// own transaction together with the version bump.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx,
		`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	for {
		done, err := s.migrateOne(ctx)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next migration, if any, and reports whether the
// schema is current. Reading the version inside the write transaction makes
// concurrent openers of a fresh file safe.
func (s *Store) migrateOne(ctx context.Context) (done bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("begin migration: %w", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	v, err := schemaVersion(ctx, tx)
	if err != nil {
		return false, err
	}
	if v > len(migrations) {
		return false, fmt.Errorf("schema version %d is newer than this tunbench supports (%d)", v, len(migrations))
	}
	if v == len(migrations) {
		return true, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("migrate schema to version %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM schema_version`); err != nil {
		return false, fmt.Errorf("migrate schema to version %d: %w", v+1, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, v+1); err != nil {
		return false, fmt.Errorf("migrate schema to version %d: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit schema version %d: %w", v+1, err)
	}
	return false, nil
}

// schemaVersion reads the version row; a missing row means version 0.
func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// Version returns the schema version recorded in the database.
func (s *Store) Version(ctx context.Context) (int, error) {
	return schemaVersion(ctx, s.db)
}
