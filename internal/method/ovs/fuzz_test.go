package ovs

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

func FuzzParseOVSInterfaces(f *testing.F) {
	addSeeds(f, "ovs_interfaces_*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		ifs, err := ParseOVSInterfaces(data)
		if err != nil && ifs != nil {
			t.Fatalf("ParseOVSInterfaces returned interfaces with error %v", err)
		}
	})
}
