package openvpn

import (
	"testing"

	"github.com/tunbench/tunbench/internal/testenv"
)

// Fuzz targets for the family's daemon status parsers. Under any input a
// parser must not panic and must return exactly one of a result and an
// error; the seeds are the captured real outputs in testdata/.

func FuzzParseOpenVPNStatus(f *testing.F) {
	testenv.FuzzSeeds(f, "openvpn_status_*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseOpenVPNStatus(data)
		if (s == nil) == (err == nil) {
			t.Fatalf("ParseOpenVPNStatus = %v, %v: want exactly one of a result and an error", s, err)
		}
	})
}
