package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	for k, v := range r.Labels {
		if err := result.ValidateLabel(k, v); err != nil {
			return fmt.Errorf("begin run %s: %w", r.ID, err)
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin run %s: %w", r.ID, err)
	}
	defer tx.Rollback()
	if _, err := insertRun(ctx, s.d, tx, r, false); err != nil {
		return fmt.Errorf("begin run %s: %w", r.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("begin run %s: %w", r.ID, err)
	}
	return nil
}

// execer is what *sql.DB and *sql.Tx have in common for writing.
type execer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// insertRun writes a run and its labels; call it in a transaction. With
// skipExisting a run whose id is taken is left alone and inserted is
// false; without, that is an error.
func insertRun(ctx context.Context, d *dialect, db execer, r *result.Run, skipExisting bool) (inserted bool, err error) {
	host, err := json.Marshal(r.Host)
	if err != nil {
		return false, fmt.Errorf("encode host: %w", err)
	}
	q := `
INSERT INTO runs (id, schema, started, finished, status, error, testbed, scenario, host)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if skipExisting {
		q += ` ON CONFLICT (id) DO NOTHING`
	}
	res, err := db.ExecContext(ctx, d.rebind(q),
		r.ID, r.Schema, r.Started.UTC().Format(timeFormat), formatTime(r.Finished),
		r.Status, r.Error, r.Testbed, r.Scenario, string(host))
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
		if _, err := db.ExecContext(ctx, d.rebind(`INSERT INTO run_labels (run_id, key, value) VALUES (?, ?, ?)`),
			r.ID, k, r.Labels[k]); err != nil {
			return false, fmt.Errorf("label %s: %w", k, err)
		}
	}
	return true, nil
}

// FinishRun records how a run ended: status is one of result.RunDone,
// RunFailed or RunInterrupted, errMsg the reason for failure (may be empty).
func (s *Store) FinishRun(ctx context.Context, id, status, errMsg string, finished time.Time) error {
	if err := s.writable(); err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx,
		s.q(`UPDATE runs SET status = ?, error = ?, finished = ? WHERE id = ?`),
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
	labels, err := s.labels(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	for i := range runs {
		runs[i].Labels = labels[runs[i].ID]
	}
	return runs, nil
}

// labels loads the labels of one run, or of every run when id is empty,
// by run id.
func (s *Store) labels(ctx context.Context, id string) (map[string]map[string]string, error) {
	query, args := `SELECT run_id, key, value FROM run_labels`, []any{}
	if id != "" {
		query, args = query+` WHERE run_id = ?`, append(args, id)
	}
	return s.queryLabels(ctx, query, args)
}

// queryLabels reads the labels query selects (run_id, key, value), by run
// id.
func (s *Store) queryLabels(ctx context.Context, query string, args []any) (map[string]map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("load labels: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]string{}
	for rows.Next() {
		var run, k, v string
		if err := rows.Scan(&run, &k, &v); err != nil {
			return nil, fmt.Errorf("load labels: %w", err)
		}
		if out[run] == nil {
			out[run] = map[string]string{}
		}
		out[run][k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load labels: %w", err)
	}
	return out, nil
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
	r, err := scanRun(s.db.QueryRowContext(ctx, s.q(`SELECT `+runColumns+` FROM runs WHERE id = ?`), full))
	if err != nil {
		return result.Run{}, nil, fmt.Errorf("load run %s: %w", full, err)
	}
	labels, err := s.labels(ctx, full)
	if err != nil {
		return result.Run{}, nil, fmt.Errorf("load run %s: %w", full, err)
	}
	r.Labels = labels[full]
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
		s.q(`SELECT id FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id LIMIT 11`), utf8.RuneCountInString(id), id)
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
	return scanRunHost(row, decodeHost)
}

// decodeHost decodes a run's host column.
func decodeHost(text string) (result.Host, error) {
	var h result.Host
	err := json.Unmarshal([]byte(text), &h)
	return h, err
}

// hostDecoder decodes host columns, each distinct text once: a machine's
// runs mostly share their host record (the same kernel, tools and
// sysctls night after night). Every Host it returns has maps and a NIC
// of its own.
func hostDecoder() func(string) (result.Host, error) {
	seen := map[string]result.Host{}
	return func(text string) (result.Host, error) {
		h, ok := seen[text]
		if !ok {
			var err error
			if h, err = decodeHost(text); err != nil {
				return h, err
			}
			seen[text] = h
		}
		h.Tools, h.Sysctls = maps.Clone(h.Tools), maps.Clone(h.Sysctls)
		if h.NIC != nil {
			nic := *h.NIC
			h.NIC = &nic
		}
		return h, nil
	}
}

// scanRunHost scans a run, its host column decoded by decode.
func scanRunHost(row scanner, decode func(string) (result.Host, error)) (result.Run, error) {
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
	if r.Host, err = decode(host); err != nil {
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
		s.q(`UPDATE runs SET status = ?, error = '', finished = NULL WHERE id = ?`), result.RunRunning, r.ID); err != nil {
		return result.Run{}, nil, fmt.Errorf("reopen run %s: %w", r.ID, err)
	}
	r.Status, r.Error, r.Finished = result.RunRunning, "", time.Time{}
	return r, cells, nil
}
