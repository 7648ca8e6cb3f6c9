package export

import (
	"bytes"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
)

// TestGolden checks the JSON, tidy CSV and wide CSV exports of every
// fixture run against testdata/.
func TestGolden(t *testing.T) {
	for _, f := range fixture.Fixtures {
		t.Run(f.Name, func(t *testing.T) {
			run, cells := f.Make()
			var js, cv, wide bytes.Buffer
			if err := JSON(&js, run, cells); err != nil {
				t.Fatal(err)
			}
			if err := CSV(&cv, run, cells); err != nil {
				t.Fatal(err)
			}
			if err := WideCSV(&wide, run, cells); err != nil {
				t.Fatal(err)
			}
			fixture.Golden(t, f.Name+".json.golden", js.Bytes())
			fixture.Golden(t, f.Name+".csv.golden", cv.Bytes())
			fixture.Golden(t, f.Name+".wide.csv.golden", wide.Bytes())
		})
	}
}
