package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
)

// TestGolden checks the table of every fixture run against testdata/ and
// its width against MaxWidth.
func TestGolden(t *testing.T) {
	for _, f := range fixture.Fixtures {
		t.Run(f.Name, func(t *testing.T) {
			run, cells := f.Make()
			var tbl bytes.Buffer
			if err := Table(&tbl, run, cells, TableOptions{}); err != nil {
				t.Fatal(err)
			}
			fixture.Golden(t, f.Name+".table.golden", tbl.Bytes())
			for i, l := range strings.Split(tbl.String(), "\n") {
				if n := Runes(l); n > MaxWidth {
					t.Errorf("table line %d is %d columns wide, limit %d:\n%s", i+1, n, MaxWidth, l)
				}
			}
		})
	}
}
