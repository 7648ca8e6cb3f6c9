package wireguard

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/testenv"
)

// Fuzz targets for the family's daemon status parsers. Under any input a
// parser must not panic and must return exactly one of a result and an
// error; the seeds are the captured real outputs in testdata/.

func FuzzParseWGDump(f *testing.F) {
	testenv.FuzzSeeds(f, "wireguard_show_dump.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseWGDump(data)
		if (d == nil) == (err == nil) {
			t.Fatalf("ParseWGDump = %v, %v: want exactly one of a result and an error", d, err)
		}
	})
}

// FuzzParseUAPIGet covers the WireGuard UAPI "get=1" answer that
// wireguard-go and boringtun give.
func FuzzParseUAPIGet(f *testing.F) {
	testenv.FuzzSeeds(f, "wireguard_uapi_get.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseUAPIGet(strings.Split(string(data), "\n"))
		if (d == nil) == (err == nil) {
			t.Fatalf("parseUAPIGet = %v, %v: want exactly one of a result and an error", d, err)
		}
	})
}
