package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tunbench/tunbench/internal/result"
)

// BeginRun records the start of a run. It fills an empty r.Schema with
// result.SchemaVersion and an empty r.Status with result.RunRunning. The id
// must be non-empty and unused.
func (s *Store) BeginRun(ctx context.Context, r *result.Run) error {
	if err := s.writable(); err != nil {
		return err
	}
	if r.ID == "" {
		return errors.New("begin run: empty run id")
	}
	if r.Schema == "" {
		r.Schema = result.SchemaVersion
	}
	if r.Status == "" {
		r.Status = result.RunRunning
	}
	if err := insertRun(ctx, s.db, r); err != nil {
		return fmt.Errorf("begin run %s: %w", r.ID, err)
	}
	return nil
}

// execer is what *sql.DB and *sql.Tx have in common for writing.
type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

func insertRun(ctx context.Context, db execer, r *result.Run) error {
	host, err := json.Marshal(r.Host)
	if err != nil {
		return fmt.Errorf("encode host: %w", err)
	}
	_, err = db.ExecContext(ctx, `
INSERT INTO runs (id, schema, started, finished, status, error, testbed, scenario, host)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Schema, r.Started.UTC().Format(timeFormat), formatTime(r.Finished),
		r.Status, r.Error, r.Testbed, r.Scenario, string(host))
	return err
}

// FinishRun records how a run ended: status is one of result.RunDone,
// RunFailed or RunInterrupted, errMsg the reason for failure (may be empty).
func (s *Store) FinishRun(ctx context.Context, id, status, errMsg string, finished time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx,
		`UPDATE runs SET status = ?, error = ?, finished = ? WHERE id = ?`,
		status, errMsg, formatTime(finished), id)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("finish run %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("finish run %s: %w", id, ErrNotFound)
	}
	return nil
}

const runColumns = `id, schema, started, finished, status, error, testbed, scenario, host`

// Runs returns every run, newest (by start time) first. Cells are not loaded.
func (s *Store) Runs(ctx context.Context) ([]result.Run, error) {
	rows, err := s.db.QueryContext(ctx,
		`SELECT `+runColumns+` FROM runs ORDER BY started DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var runs []result.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// Run returns one run and its cells in the order they were added. id may be
// a full id, a prefix that matches exactly one run, or Latest. A missing run
// gives an error wrapping ErrNotFound; a prefix matching several runs gives
// one wrapping ErrAmbiguous that lists them.
func (s *Store) Run(ctx context.Context, id string) (result.Run, []result.Cell, error) {
	full, err := s.resolve(ctx, id)
	if err != nil {
		return result.Run{}, nil, err
	}
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, full))
	if err != nil {
		return result.Run{}, nil, fmt.Errorf("load run %s: %w", full, err)
	}
	cells, err := s.cells(ctx, full)
	if err != nil {
		return result.Run{}, nil, err
	}
	return r, cells, nil
}

// resolve turns an id, prefix or Latest into a full run id.
func (s *Store) resolve(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", errors.New("find run: empty run id")
	}
	if id == Latest {
		var full string
		err := s.db.QueryRowContext(ctx,
			`SELECT id FROM runs ORDER BY started DESC, id DESC LIMIT 1`).Scan(&full)
		if errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("find latest run: no runs: %w", ErrNotFound)
		}
		if err != nil {
			return "", fmt.Errorf("find latest run: %w", err)
		}
		return full, nil
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT id FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 11`, utf8.RuneCountInString(id), id)
	if err != nil {
		return "", fmt.Errorf("find run %s: %w", id, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return "", fmt.Errorf("find run %s: %w", id, err)
		}
		if m == id {
			return m, nil // an exact match wins over longer ids it prefixes
		}
		ids = append(ids, m)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("find run %s: %w", id, err)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("find run %s: %w", id, ErrNotFound)
	case 1:
		return ids[0], nil
	}
	if len(ids) > 10 {
		ids = append(ids[:10], "...")
	}
	return "", fmt.Errorf("find run %s: %w: matches %s", id, ErrAmbiguous, strings.Join(ids, ", "))
}

// scanner is what *sql.Row and *sql.Rows have in common.
type scanner interface {
	Scan(dest ...any) error
}

func scanRun(row scanner) (result.Run, error) {
	var (
		r                 result.Run
		started, finished sql.NullString
		host              string
	)
	if err := row.Scan(&r.ID, &r.Schema, &started, &finished, &r.Status, &r.Error,
		&r.Testbed, &r.Scenario, &host); err != nil {
		return result.Run{}, err
	}
	var err error
	if r.Started, err = parseTime(started); err != nil {
		return result.Run{}, fmt.Errorf("run %s: %w", r.ID, err)
	}
	if r.Finished, err = parseTime(finished); err != nil {
		return result.Run{}, fmt.Errorf("run %s: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(host), &r.Host); err != nil {
		return result.Run{}, fmt.Errorf("run %s: decode host: %w", r.ID, err)
	}
	return r, nil
}

// ReopenRun marks an interrupted run (any status) as running again, so
// "tunbench run --resume" can add the cells it lacks, and returns it with
// the cells already stored. id may be a full id, a prefix or Latest.
func (s *Store) ReopenRun(ctx context.Context, id string) (result.Run, []result.Cell, error) {
	r, cells, err := s.Run(ctx, id)
	if err != nil {
		return result.Run{}, nil, err
	}
	if _, err := s.db.ExecContext(ctx,
		`UPDATE runs SET status = ?, error = '', finished = NULL WHERE id = ?`, result.RunRunning, r.ID); err != nil {
		return result.Run{}, nil, fmt.Errorf("reopen run %s: %w", r.ID, err)
	}
	r.Status, r.Error, r.Finished = result.RunRunning, "", time.Time{}
	return r, cells, nil
}
