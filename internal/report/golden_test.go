package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/result"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var fixtures = []struct {
	name string
	make func() (result.Run, []result.Cell)
}{
	{"local", localRun},
	{"matrix", matrixRun},
	{"emulated", emulatedRun},
	{"tests", testsRun},
	{"hostcpu", hostCPURun},
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got); run go test -update if the change is intended:\n%s", path, diff)
	}
}

func TestGolden(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			run, cells := f.make()
			var tbl, js, cv, wide bytes.Buffer
			if err := Table(&tbl, run, cells, TableOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := JSON(&js, run, cells); err != nil {
				t.Fatal(err)
			}
			if err := CSV(&cv, run, cells); err != nil {
				t.Fatal(err)
			}
			if err := WideCSV(&wide, run, cells); err != nil {
				t.Fatal(err)
			}
			golden(t, f.name+".table.golden", tbl.Bytes())
			golden(t, f.name+".json.golden", js.Bytes())
			golden(t, f.name+".csv.golden", cv.Bytes())
			golden(t, f.name+".wide.csv.golden", wide.Bytes())

			for i, l := range strings.Split(tbl.String(), "\n") {
				if n := runes(l); n > MaxWidth {
					t.Errorf("table line %d is %d columns wide, limit %d:\n%s", i+1, n, MaxWidth, l)
				}
			}
		})
	}
}
