package report

import (
	"bytes"
	"strings"
	"testing"
)

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
