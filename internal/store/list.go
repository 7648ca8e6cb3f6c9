package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// RunFilter selects runs to list (serve's runs page). Its zero value
// selects every run.
type RunFilter struct {
	// Method keeps runs with a cell of this method.
	Method string
	// Testbed, Machine (host name) and Kernel keep runs whose are equal.
	Testbed, Machine, Kernel string
	// Labels keeps runs with each label equal; an empty value also
	// matches a run without the label.
	Labels map[string]string
}

// RunList is one page of the runs a RunFilter selects.
type RunList struct {
	// Runs are the page's runs, newest (by start time) first, with their
	// labels.
	Runs []result.Run
	// Methods are the methods each of Runs measured, sorted, by run id.
	Methods map[string][]string
	// Matched counts the runs the filter selects, Total those stored.
	Matched, Total int
}

// ListRuns returns the runs f selects from the offset-th newest, at most
// limit of them (limit <= 0: all), filtering, counting and paging in the
// database, so a page costs what it shows, not what is stored.
func (s *Store) ListRuns(ctx context.Context, f RunFilter, offset, limit int) (RunList, error) {
	var l RunList
	j := sqliteJSON
	if s.Postgres() {
		j = postgresJSON
	}
	var where []string
	var args []any
	add := func(cond string, a ...any) { where, args = append(where, cond), append(args, a...) }
	if f.Method != "" {
		add(`id IN (SELECT run_id FROM cells WHERE method = ?)`, f.Method)
	}
	if f.Testbed != "" {
		add(`testbed = ?`, f.Testbed)
	}
	if f.Machine != "" {
		add(`(`+j.json("host")+` ->> 'hostname') = ?`, f.Machine)
	}
	if f.Kernel != "" {
		add(`(`+j.json("host")+` ->> 'kernel') = ?`, f.Kernel)
	}
	for _, k := range slices.Sorted(maps.Keys(f.Labels)) {
		if v := f.Labels[k]; v != "" {
			add(`id IN (SELECT run_id FROM run_labels WHERE key = ? AND value = ?)`, k, v)
		} else {
			add(`id NOT IN (SELECT run_id FROM run_labels WHERE key = ? AND value <> '')`, k)
		}
	}
	cond := ""
	if len(where) > 0 {
		cond = ` WHERE ` + strings.Join(where, ` AND `)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM runs`).Scan(&l.Total); err != nil {
		return l, fmt.Errorf("list runs: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT count(*) FROM runs`+cond), args...).Scan(&l.Matched); err != nil {
		return l, fmt.Errorf("list runs: %w", err)
	}
	query := `SELECT ` + runColumns + ` FROM runs` + cond + ` ORDER BY started DESC, id DESC`
	if limit > 0 {
		query, args = query+` LIMIT ? OFFSET ?`, append(args, limit, offset)
	} else if offset > 0 {
		return l, fmt.Errorf("list runs: an offset (%d) needs a limit", offset)
	}
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return l, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return l, fmt.Errorf("list runs: %w", err)
		}
		l.Runs = append(l.Runs, r)
	}
	if err := rows.Err(); err != nil {
		return l, fmt.Errorf("list runs: %w", err)
	}
	rows.Close()
	if err := s.pageDetails(ctx, &l); err != nil {
		return l, fmt.Errorf("list runs: %w", err)
	}
	return l, nil
}

// pageDetails loads the labels and methods of l.Runs, a chunk of runs at
// a time.
func (s *Store) pageDetails(ctx context.Context, l *RunList) error {
	l.Methods = map[string][]string{}
	labels := map[string]map[string]string{}
	for chunk := range slices.Chunk(l.Runs, runChunk) {
		marks := make([]string, len(chunk))
		ids := make([]any, len(chunk))
		for i, r := range chunk {
			marks[i], ids[i] = "?", r.ID
		}
		in := `(` + strings.Join(marks, ", ") + `)`
		rows, err := s.db.QueryContext(ctx, s.q(`SELECT run_id, key, value FROM run_labels WHERE run_id IN `+in), ids...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var run, k, v string
			if err := rows.Scan(&run, &k, &v); err != nil {
				rows.Close()
				return err
			}
			if labels[run] == nil {
				labels[run] = map[string]string{}
			}
			labels[run][k] = v
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		rows.Close()
		rows, err = s.db.QueryContext(ctx, s.q(`SELECT DISTINCT run_id, method FROM cells WHERE run_id IN `+in+` ORDER BY run_id, method`), ids...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var run, m string
			if err := rows.Scan(&run, &m); err != nil {
				rows.Close()
				return err
			}
			l.Methods[run] = append(l.Methods[run], m)
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		rows.Close()
	}
	for i := range l.Runs {
		l.Runs[i].Labels = labels[l.Runs[i].ID]
	}
	return nil
}
