package ipsec

import (
	"os"
	"path/filepath"
	"testing"
)

// Fuzz targets for the family's daemon status parsers. Under any input a
// parser must not panic and must return exactly one of a result and an
// error; the seeds are the captured real outputs in testdata/.

func addSeeds(f *testing.F, pattern string) {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds match testdata/%s", pattern)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func FuzzParseListSAs(f *testing.F) {
	addSeeds(f, "ipsec_list_sas_*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		// An empty list is a valid answer ("no SA yet"), so only the
		// absence of a panic and of a half answer is asserted.
		sas, err := parseListSAs(data)
		if err != nil && sas != nil {
			t.Fatalf("parseListSAs returned SAs with error %v", err)
		}
	})
}
