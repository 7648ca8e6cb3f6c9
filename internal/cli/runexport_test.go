package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// closingLine is the line a run ends with on stderr.
var closingLine = regexp.MustCompile(`(?m)^run (\S+): \d+ cells in .*; database (\S+); export (\S+)$`)

// TestRunExportsBesideTheDatabase: without --export, a run's JSON export
// is exports/<run id>.json beside the database (docs/results.md), and
// the run's closing line names it.
func TestRunExportsBesideTheDatabase(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	code, stdout, stderr := run(t, "run", "--db", db, "--methods", "native",
		"--duration", "1s", "--omit", "0s", "--latency", "0s", "--reps", "1")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := closingLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no closing line naming the database and the export:\n%s", stderr)
	}
	id, path := m[1], m[3]
	if want := filepath.Join(dir, "exports", id+".json"); path != want || m[2] != db {
		t.Errorf("closing line: database %s, export %s; want %s, %s", m[2], path, db, want)
	}
	data, err := os.ReadFile(filepath.Join(dir, "exports", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc export.Document
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Run.ID != id || doc.Run.Testbed != "local" || len(doc.Cells) != 1 || doc.Cells[0].Status != result.StatusOK {
		t.Errorf("export: run %q on %q, %d cells; want run %s on local, one ok cell", doc.Run.ID, doc.Run.Testbed, len(doc.Cells), id)
	}
}
