package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// RunQuery selects runs and cells to read many at once (tunbench trend,
// serve's trend pages). Its zero value selects every run and cell.
type RunQuery struct {
	// Testbed keeps only runs on this testbed.
	Testbed string
	// Machine keeps only runs measured on this host name.
	Machine string
	// Since keeps only runs started at or after it.
	Since time.Time
	// Method keeps only cells of this method.
	Method string
	// Key keeps only cells of this key, and cells stored without a key
	// (their key is the reader's to derive).
	Key string
	// KeyParts keeps only cells whose key has every one of these as a
	// "/"-separated part (e.g. "mtu9000", "offloads-off"). Cells stored
	// without a key are kept: their key is the reader's to derive.
	KeyParts []string
	// WithoutSeries leaves out of the cells what only figures over
	// time read, and what takes most of the decoding: throughput's
	// per-second intervals and the latency CDF (empty in the cells
	// returned). Trends, which read a cell's summary figures, set it.
	WithoutSeries bool
	// FiguresOnly reads of each cell only what a trend reads, from the
	// figure columns rather than the record (cellfigures.go): the cells
	// returned carry their id, run id, key, method, implementation,
	// repetition and status, the receiver's throughput
	// (Throughput.BitsPerSecond), the p50 and p99 RTTs (Latency.P50,
	// P99), Meta.Busy, and Meta.Emulated set when the cell's record
	// says it was emulated or names an emulated host; Params only for a
	// cell stored without a key; nothing else.
	FiguresOnly bool
	// Keep, when not nil, is asked about each run the fields above let
	// through, with its labels; a run it refuses is left out, and its
	// cells are not decoded.
	Keep func(result.Run) bool
}

// RunCells is a run with its cells.
type RunCells struct {
	Run   result.Run
	Cells []result.Cell
}

// RunsWithCells returns the runs q selects that have at least one cell q
// selects, oldest first (by start, then id), each with those cells in the
// order they were added. Testbed, machine, start, method and key are
// filtered in the database; the runs are read first, and then the cells
// of the runs kept only, a chunk of runs at a time through the index on
// cells' run ids, so the cost follows what is selected, not the store's
// size.
func (s *Store) RunsWithCells(ctx context.Context, q RunQuery) ([]RunCells, error) {
	var where []string
	var args []any
	if q.Testbed != "" {
		where, args = append(where, `testbed = ?`), append(args, q.Testbed)
	}
	if q.Machine != "" {
		j := sqliteJSON
		if s.Postgres() {
			j = postgresJSON
		}
		where, args = append(where, `(`+j.json("host")+` ->> 'hostname') = ?`), append(args, q.Machine)
	}
	if !q.Since.IsZero() {
		where, args = append(where, `started >= ?`), append(args, q.Since.UTC().Format(timeFormat))
	}
	runs, all, err := s.selectRuns(ctx, where, args, q.Keep)
	if err != nil {
		return nil, fmt.Errorf("load runs with cells: %w", err)
	}
	var cellWhere []string
	var cellArgs []any
	if q.Method != "" {
		// SQLite's planner (without statistics) takes cells_figures
		// (run_id, method, ...) for this; before that index it went
		// through cells_method and visited every cell of the method once
		// per chunk.
		cellWhere, cellArgs = append(cellWhere, `method = ?`), append(cellArgs, q.Method)
	}
	if q.Key != "" {
		cellWhere, cellArgs = append(cellWhere, `key IN (?, '')`), append(cellArgs, q.Key)
	}
	if len(q.KeyParts) > 0 {
		// A superset (SQLite's LIKE ignores ASCII case); hasParts
		// matches the parts exactly.
		var like []string
		for _, p := range q.KeyParts {
			like, cellArgs = append(like, `('/' || key || '/') LIKE ? ESCAPE '\'`), append(cellArgs, "%/"+likeEscape(p)+"/%")
		}
		cellWhere = append(cellWhere, `(key = '' OR `+strings.Join(like, ` AND `)+`)`)
	}
	byID := make(map[string]*RunCells, len(runs))
	for i := range runs {
		byID[runs[i].Run.ID] = &runs[i]
	}
	read := func(runWhere string, runArgs []any) error {
		where := ` WHERE ` + runWhere
		if len(cellWhere) > 0 {
			where += ` AND ` + strings.Join(cellWhere, ` AND `)
		}
		if q.FiguresOnly {
			return s.scanFigureCells(ctx, figuresSelect+where, append(runArgs, cellArgs...), byID, q.KeyParts)
		}
		return s.scanCells(ctx, `SELECT run_id, id, key, record FROM cells`+where, append(runArgs, cellArgs...), byID, q.KeyParts, q.WithoutSeries)
	}
	if all {
		// Every run the SQL filters let through is kept: one query
		// selects them again, rather than one per chunk with their ids.
		runWhere := `run_id IN (SELECT id FROM runs)`
		if len(where) > 0 {
			runWhere = `run_id IN (SELECT id FROM runs WHERE ` + strings.Join(where, ` AND `) + `)`
		}
		if err := read(runWhere, slices.Clone(args)); err != nil {
			return nil, err
		}
	} else {
		for chunk := range slices.Chunk(runs, runChunk) {
			marks := make([]string, len(chunk))
			chunkArgs := make([]any, 0, len(chunk)+len(cellArgs))
			for i, rc := range chunk {
				marks[i] = "?"
				chunkArgs = append(chunkArgs, rc.Run.ID)
			}
			if err := read(`run_id IN (`+strings.Join(marks, ", ")+`)`, chunkArgs); err != nil {
				return nil, err
			}
		}
	}
	runs = slices.DeleteFunc(runs, func(rc RunCells) bool { return len(rc.Cells) == 0 })
	for _, rc := range runs {
		slices.SortFunc(rc.Cells, func(a, b result.Cell) int { return cmp.Compare(a.ID, b.ID) })
	}
	return runs, nil
}

// runChunk is how many runs' cells one query reads: well under both
// databases' limits on a statement's parameters.
const runChunk = 500

// scanCells decodes the cells query reads into their runs in byID,
// skipping those whose key lacks one of parts; slim leaves out intervals
// and CDFs (RunQuery.WithoutSeries).
func (s *Store) scanCells(ctx context.Context, query string, args []any, byID map[string]*RunCells, parts []string, slim bool) error {
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return fmt.Errorf("load runs with cells: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			runID, key string
			id         int64
			rec        sql.RawBytes
		)
		if err := rows.Scan(&runID, &id, &key, &rec); err != nil {
			return fmt.Errorf("load runs with cells: %w", err)
		}
		rc := byID[runID]
		if rc == nil || !hasParts(key, parts) {
			continue
		}
		c, err := decodeCell(rec, slim)
		if err != nil {
			return fmt.Errorf("load cell %d of run %s: decode record: %w", id, runID, err)
		}
		c.ID = id
		rc.Cells = append(rc.Cells, c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load runs with cells: %w", err)
	}
	return nil
}

// selectRuns reads the runs that pass where and keep, with
// their labels, oldest first; all is true when keep refused none.
func (s *Store) selectRuns(ctx context.Context, where []string, args []any, keep func(result.Run) bool) (out []RunCells, all bool, err error) {
	query := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	rows, err := s.db.QueryContext(ctx, s.q(query+` ORDER BY started, id`), args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	decode := hostDecoder()
	// The runs are gathered in blocks and copied once into a slice of
	// their number: a RunCells is large (a run with its host record), and
	// appending 10,000 of them one at a time allocated about five times
	// their size while the slice grew, a fifth of what a trend page
	// allocated and its garbage collector then went through.
	var blocks [][]RunCells
	block := make([]RunCells, 0, 64)
	count := 0
	for rows.Next() {
		r, err := scanRunHost(rows, decode)
		if err != nil {
			return nil, false, err
		}
		if len(block) == cap(block) {
			blocks = append(blocks, block)
			block = make([]RunCells, 0, min(2*cap(block), 2048))
		}
		block = append(block, RunCells{Run: r})
		count++
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	rows.Close()
	out = make([]RunCells, 0, count)
	for _, b := range append(blocks, block) {
		out = append(out, b...)
	}
	// The labels after the runs: a run added in between has its labels.
	labels, err := s.labelsWhere(ctx, where, args)
	if err != nil {
		return nil, false, err
	}
	n := len(out)
	out = slices.DeleteFunc(out, func(rc RunCells) bool {
		rc.Run.Labels = labels[rc.Run.ID]
		return keep != nil && !keep(rc.Run)
	})
	for i := range out {
		out[i].Run.Labels = labels[out[i].Run.ID]
	}
	return out, len(out) == n, nil
}

// labelsWhere loads the labels of the runs that pass where, by run id.
func (s *Store) labelsWhere(ctx context.Context, where []string, args []any) (map[string]map[string]string, error) {
	if len(where) == 0 {
		return s.labels(ctx, "")
	}
	return s.queryLabels(ctx, `SELECT run_id, key, value FROM run_labels WHERE run_id IN (SELECT id FROM runs WHERE `+
		strings.Join(where, ` AND `)+`)`, args)
}

// hasParts reports whether key has every one of parts as a "/"-separated
// part; an empty key has them all.
func hasParts(key string, parts []string) bool {
	if key == "" || len(parts) == 0 {
		return true
	}
	have := strings.Split(key, "/")
	for _, p := range parts {
		if !slices.Contains(have, p) {
			return false
		}
	}
	return true
}

// likeEscape escapes LIKE's wildcards (and its escape character, \).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// slimCell decodes a cell record but only checks, not decodes, its
// per-second intervals and latency CDF: the outer fields hide the
// embedded ones of the same JSON names.
type slimCell struct {
	result.Cell
	Throughput *struct {
		result.Throughput
		Intervals json.RawMessage `json:"intervals"`
	} `json:"throughput"`
	Latency *struct {
		result.Latency
		CDF json.RawMessage `json:"cdf"`
	} `json:"latency"`
}

// decodeCell decodes a stored record, without intervals and CDF when
// slim.
func decodeCell(rec []byte, slim bool) (result.Cell, error) {
	if !slim {
		var c result.Cell
		err := json.Unmarshal(rec, &c)
		return c, err
	}
	var sc slimCell
	if err := json.Unmarshal(rec, &sc); err != nil {
		return result.Cell{}, err
	}
	c := sc.Cell
	if sc.Throughput != nil {
		c.Throughput = &sc.Throughput.Throughput
	}
	if sc.Latency != nil {
		c.Latency = &sc.Latency.Latency
	}
	return c, nil
}
