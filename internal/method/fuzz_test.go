package method

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fuzz targets for every daemon status parser. Under any input a parser
// must not panic and must return exactly one of a result and an error;
// the seeds are the captured real outputs in testdata/.

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

func FuzzParseOpenVPNStatus(f *testing.F) {
	addSeeds(f, "openvpn_status_*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseOpenVPNStatus(data)
		if (s == nil) == (err == nil) {
			t.Fatalf("ParseOpenVPNStatus = %v, %v: want exactly one of a result and an error", s, err)
		}
	})
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

func FuzzParseOVSInterfaces(f *testing.F) {
	addSeeds(f, "ovs_interfaces_*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		ifs, err := ParseOVSInterfaces(data)
		if err != nil && ifs != nil {
			t.Fatalf("ParseOVSInterfaces returned interfaces with error %v", err)
		}
	})
}

func FuzzParseWGDump(f *testing.F) {
	addSeeds(f, "wireguard_show_dump.txt")
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
	addSeeds(f, "wireguard_uapi_get.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := parseUAPIGet(strings.Split(string(data), "\n"))
		if (d == nil) == (err == nil) {
			t.Fatalf("parseUAPIGet = %v, %v: want exactly one of a result and an error", d, err)
		}
	})
}
