package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
}

// SchemaVersion is the database schema version this package writes; it
// equals len(migrations).
const SchemaVersion = 1

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
