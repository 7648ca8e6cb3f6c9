package ovs

import (
	"testing"

	"github.com/tunbench/tunbench/internal/testenv"
)

// Fuzz targets for the family's daemon status parsers. Under any input a
// parser must not panic and must return exactly one of a result and an
// error; the seeds are the captured real outputs in testdata/.

func FuzzParseOVSInterfaces(f *testing.F) {
	testenv.FuzzSeeds(f, "ovs_interfaces_*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		ifs, err := ParseOVSInterfaces(data)
		if err != nil && ifs != nil {
			t.Fatalf("ParseOVSInterfaces returned interfaces with error %v", err)
		}
	})
}
