package ipsec

import (
	"testing"

	"github.com/tunbench/tunbench/internal/testenv"
)

// Fuzz targets for the family's daemon status parsers. Under any input a
// parser must not panic and must return exactly one of a result and an
// error; the seeds are the captured real outputs in testdata/.

func FuzzParseListSAs(f *testing.F) {
	testenv.FuzzSeeds(f, "ipsec_list_sas_*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		// An empty list is a valid answer ("no SA yet"), so only the
		// absence of a panic and of a half answer is asserted.
		sas, err := parseListSAs(data)
		if err != nil && sas != nil {
			t.Fatalf("parseListSAs returned SAs with error %v", err)
		}
	})
}
