package report

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
)

// testdata/fixture.db holds two real runs measured on the development
// machine (2 cores, Linux 6.18, namespaces joined by a veth), oldest first:
//
//	"matrix":  tunbench run --methods native,vxlan,srv6 --mtu 1500,9000 --offloads on,off \
//	           --duration 3s --latency 2s --reps 3
//	"streams": tunbench run --methods native,vxlan --streams 1,4 \
//	           --duration 3s --latency 2s --reps 3
//
// (runs c7d7fe and e4d4ff, on an otherwise idle machine). The streams run
// shares its single-stream cells (MTU 1500, offloads on) with the matrix
// run, so the two can be compared. Three seconds are short, so several
// rows are still unstable (CV above 10%) and the take-aways built on them
// are withheld: that is what the report must do with such data.
const fixtureDBPath = "testdata/fixture.db"

// dbPath is fixtureDBPath in this package's directory, whichever package's
// test reads it.
func dbPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), fixtureDBPath)
}

// fixtureNames names the fixture runs in golden file names, oldest first.
var fixtureNames = []string{"matrix", "streams"}

// loadFixtureDB loads the runs of the fixture database, oldest first. The file
// is copied first, so that opening it (WAL files, migrations) never writes
// into testdata/.
// Records are one stored run and its cells.
type Records struct {
	Run   result.Run
	Cells []result.Cell
}

func loadFixtureDB(t testing.TB) []Records {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.db")
	copyFile(t, dbPath(), path)
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	runs, err := st.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(runs)
	if len(runs) != len(fixtureNames) {
		t.Fatalf("fixture database has %d runs, want %d", len(runs), len(fixtureNames))
	}
	var out []Records
	for _, r := range runs {
		run, cells, err := st.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Records{Run: run, Cells: cells})
	}
	return out
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// scaleThroughput returns a copy of cells in which every throughput figure
// of method is multiplied by f, as a known regression (f < 1).
func scaleThroughput(cells []result.Cell, method string, f float64) []result.Cell {
	out := make([]result.Cell, len(cells))
	for i, c := range cells {
		out[i] = c
		if c.Method != method || c.Throughput == nil {
			continue
		}
		t := *c.Throughput
		t.BitsPerSecond *= f
		t.SenderBitsPerSecond *= f
		t.Bytes = int64(float64(t.Bytes) * f)
		t.Intervals = slices.Clone(t.Intervals)
		for j := range t.Intervals {
			t.Intervals[j].BitsPerSecond *= f
			t.Intervals[j].Bytes = int64(float64(t.Intervals[j].Bytes) * f)
		}
		out[i].Throughput = &t
	}
	return out
}
