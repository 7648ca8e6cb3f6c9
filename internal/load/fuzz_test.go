package load

import (
	"os"
	"path/filepath"
	"testing"
)

// addSeeds adds every testdata file matching pattern to f's corpus.
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

// FuzzParseIperf3 and FuzzParseSockperf live beside their parsers' tests.
// The parsers' contract under any input: no panic, and exactly one of a
// result and an error (never nil, nil: a parser that "logs and returns
// nil" is what we refuse).

func FuzzParseIperf3UDP(f *testing.F) {
	addSeeds(f, "iperf3_*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := ParseIperf3UDP(data)
		if (u == nil) == (err == nil) {
			t.Fatalf("ParseIperf3UDP = %v, %v: want exactly one of a result and an error", u, err)
		}
	})
}

func FuzzParseRR(f *testing.F) {
	addSeeds(f, "rr_*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseRR(data)
		if (l == nil) == (err == nil) {
			t.Fatalf("ParseRR = %v, %v: want exactly one of a result and an error", l, err)
		}
		if err == nil && (l.Min > l.P50 || l.P50 > l.P99 || l.P99 > l.Max) {
			t.Fatalf("percentiles out of order: min %v p50 %v p99 %v max %v", l.Min, l.P50, l.P99, l.Max)
		}
	})
}
