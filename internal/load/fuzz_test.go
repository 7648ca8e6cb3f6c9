package load

import (
	"testing"

	"github.com/tunbench/tunbench/internal/testenv"
)

// FuzzParseIperf3 and FuzzParseSockperf live beside their parsers' tests.
// The parsers' contract under any input: no panic, and exactly one of a
// result and an error (never nil, nil: a parser that "logs and returns
// nil" is what we refuse).

func FuzzParseIperf3UDP(f *testing.F) {
	testenv.FuzzSeeds(f, "iperf3_*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := ParseIperf3UDP(data)
		if (u == nil) == (err == nil) {
			t.Fatalf("ParseIperf3UDP = %v, %v: want exactly one of a result and an error", u, err)
		}
	})
}

func FuzzParseRR(f *testing.F) {
	testenv.FuzzSeeds(f, "rr_*.json")
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
