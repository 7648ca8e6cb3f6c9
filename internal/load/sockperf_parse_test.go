package load

import (
	"errors"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
)

// sockperfWant is what sockperf printed in a summary, in RTT µs.
type sockperfWant struct {
	samples                      int64
	mean, stddev                 float64
	min, p25, p50, p75, p90, p99 float64
	p999, p9999, max             float64
}

// Figures printed in testdata/sockperf_pp_tcp_rtt.txt (--full-rtt).
var rttSummary = sockperfWant{
	samples: 12550, mean: 123.439, stddev: 143.930,
	min: 17.535, p25: 83.854, p50: 90.333, p75: 101.119, p90: 178.243, p99: 639.756,
	p999: 1548.520, p9999: 3570.259, max: 4345.556,
}

// Figures printed in testdata/sockperf_pp_tcp_latency.txt (no --full-rtt:
// one-way latency, RTT/2), doubled into RTT.
var latencySummary = sockperfWant{
	samples: 1549, mean: 2 * 230.612, stddev: 2 * 195.644,
	min: 2 * 10.901, p25: 2 * 135.149, p50: 2 * 203.825, p75: 2 * 257.749, p90: 2 * 359.910, p99: 2 * 1068.314,
	p999: 2 * 2187.877, p9999: 2 * 2594.930, max: 2 * 2594.930,
}

func TestParseSockperf(t *testing.T) {
	for _, tc := range []struct {
		name         string
		summary, log string // testdata files; log "" means no full log
		want         sockperfWant
		cdfPoints    int
		tol          float64 // µs between full-log figures and printed ones
	}{
		// Without a full log the printed figures are taken as they are.
		{name: "rtt summary only", summary: "sockperf_pp_tcp_rtt.txt", want: rttSummary, cdfPoints: 10},
		{name: "latency summary only", summary: "sockperf_pp_tcp_latency.txt", want: latencySummary, cdfPoints: 10},
		// With one they are recomputed from every request, and must agree
		// with what sockperf printed up to its 1 ns rounding.
		{name: "rtt with full log", summary: "sockperf_pp_tcp_rtt.txt", log: "sockperf_pp_tcp_rtt.csv.gz",
			want: rttSummary, cdfPoints: 104, tol: 0.002},
		{name: "latency with full log", summary: "sockperf_pp_tcp_latency.txt", log: "sockperf_pp_tcp_latency.csv",
			want: latencySummary, cdfPoints: 104, tol: 0.004},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fullLog []byte
			if tc.log != "" {
				fullLog = readTestdata(t, tc.log)
			}
			got, err := ParseSockperf(readTestdata(t, tc.summary), fullLog)
			if err != nil {
				t.Fatalf("ParseSockperf: %v", err)
			}
			w := tc.want
			if got.Tool != "sockperf" || got.Version != "3.7-no.git" {
				t.Errorf("tool %q version %q, want sockperf 3.7-no.git", got.Tool, got.Version)
			}
			if got.Samples != w.samples {
				t.Errorf("samples %d, want %d", got.Samples, w.samples)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"min", got.Min, w.min}, {"p50", got.P50, w.p50}, {"p90", got.P90, w.p90},
				{"p99", got.P99, w.p99}, {"max", got.Max, w.max},
				// Printed with 3 decimals; doubled for latency output.
				{"mean", got.Mean, w.mean}, {"stddev", got.StdDev, w.stddev},
			} {
				tol := max(tc.tol, 1e-9)
				if f.name == "mean" || f.name == "stddev" {
					tol = max(tc.tol, 1e-9) + 0.001
				}
				if !near(f.got, f.want, tol) {
					t.Errorf("%s RTT %.4f µs, sockperf printed %.4f", f.name, f.got, f.want)
				}
			}
			if !(got.Min <= got.P50 && got.P50 <= got.P90 && got.P90 <= got.P99 && got.P99 <= got.Max) {
				t.Errorf("percentiles out of order: min %v p50 %v p90 %v p99 %v max %v", got.Min, got.P50, got.P90, got.P99, got.Max)
			}
			checkCDF(t, got, tc.cdfPoints)
			// The CDF's tail agrees with the percentiles sockperf printed.
			for _, q := range []struct{ frac, want float64 }{
				{0.25, w.p25}, {0.75, w.p75}, {0.999, w.p999}, {0.9999, w.p9999},
			} {
				rtt, ok := cdfAt(got.CDF, q.frac)
				if !ok || !near(rtt, q.want, max(tc.tol, 1e-9)) {
					t.Errorf("CDF at %v: %v (present %v), sockperf printed %v", q.frac, rtt, ok, q.want)
				}
			}
		})
	}
}

func checkCDF(t *testing.T, l *result.Latency, points int) {
	t.Helper()
	if len(l.CDF) != points {
		t.Errorf("CDF has %d points, want %d", len(l.CDF), points)
	}
	if len(l.CDF) == 0 {
		return
	}
	first, last := l.CDF[0], l.CDF[len(l.CDF)-1]
	if first.Fraction != 0 || first.RTT != l.Min || last.Fraction != 1 || last.RTT != l.Max {
		t.Errorf("CDF runs from %+v to %+v, want min %v to max %v", first, last, l.Min, l.Max)
	}
	for i := 1; i < len(l.CDF); i++ {
		a, b := l.CDF[i-1], l.CDF[i]
		if b.Fraction <= a.Fraction || b.RTT < a.RTT {
			t.Errorf("CDF not increasing at %d: %+v then %+v", i, a, b)
		}
	}
	if p50, ok := cdfAt(l.CDF, 0.5); !ok || p50 != l.P50 {
		t.Errorf("CDF at 0.5 is %v (present %v), P50 is %v", p50, ok, l.P50)
	}
}

func cdfAt(cdf []result.Quantile, frac float64) (float64, bool) {
	for _, q := range cdf {
		if near(q.Fraction, frac, 1e-12) {
			return q.RTT, true
		}
	}
	return 0, false
}

func TestParseSockperfFailures(t *testing.T) {
	rtt := readTestdata(t, "sockperf_pp_tcp_rtt.txt")
	cut := rtt[:strings.Index(string(rtt), "Total ")]
	for _, tc := range []struct {
		name         string
		summary, log []byte
		toolMsg      string // want a *ToolError containing this
		contains     string // else want an error containing this
	}{{
		name:    "connection refused (real), empty full log (real)",
		summary: readTestdata(t, "sockperf_pp_refused.txt"), log: readTestdata(t, "sockperf_pp_refused.csv"),
		toolMsg: "ERROR: Can`t connect socket (errno=111 Connection refused)",
	}, {
		name:    "no valid observations with --no-rdtsc (real)",
		summary: readTestdata(t, "sockperf_pp_no_rdtsc.txt"),
		toolMsg: "No valid observations found",
	}, {
		name:    "IPv6 address rejected by sockperf 3.7 (real)",
		summary: readTestdata(t, "sockperf_pp_ipv6.txt"),
		toolMsg: "'-i' Invalid address: 2001:2::2",
	}, {
		name: "empty output", summary: nil, contains: "output is empty",
	}, {
		name: "real output cut before the statistics", summary: cut, contains: "no latency statistics",
	}, {
		name:    "full log of another run",
		summary: rtt, log: readTestdata(t, "sockperf_pp_tcp_latency.csv"),
		contains: "not the same run",
	}, {
		name: "full log without packet table", summary: rtt, log: []byte("hello\n"),
		contains: "no packet table",
	}, {
		name: "full log with a broken row", summary: rtt,
		log:      []byte("packet, txTime(sec), rxTime(sec), rtt(usec)\n0, 2.1, 2.2, 100000.000\n1, x, 2.3, 1.0\n"),
		contains: "line 3",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSockperf(tc.summary, tc.log)
			if err == nil {
				t.Fatalf("ParseSockperf = %+v, want an error", got)
			}
			if got != nil {
				t.Errorf("record returned with error: %+v", got)
			}
			var te *ToolError
			if tc.toolMsg != "" {
				if !errors.As(err, &te) || te.Tool != "sockperf" || !strings.Contains(te.Message, tc.toolMsg) {
					t.Fatalf("error %v, want *ToolError quoting %q", err, tc.toolMsg)
				}
				return
			}
			if errors.As(err, &te) {
				t.Errorf("error %v is a *ToolError; sockperf reported nothing", err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not contain %q", err, tc.contains)
			}
		})
	}
}

func TestQuantileRule(t *testing.T) {
	// sockperf's rule, index = (int)(0.5 + q*n) - 1, on 1..10.
	data := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct{ q, want float64 }{
		{0, 1}, {0.01, 1}, {0.25, 3}, {0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10},
	} {
		if got := quantile(data, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := quantile([]float64{7}, 0.5); got != 7 {
		t.Errorf("quantile of one sample = %v", got)
	}
}

func FuzzParseSockperf(f *testing.F) {
	rtt := readTestdata(f, "sockperf_pp_tcp_rtt.txt")
	f.Add(rtt, []byte(nil))
	f.Add(rtt, []byte("packet, txTime(sec), rxTime(sec), rtt(usec)\n0, 1.0, 1.5, 500000.000\n"))
	f.Add(readTestdata(f, "sockperf_pp_tcp_latency.txt"), readTestdata(f, "sockperf_pp_tcp_latency.csv")[:2000])
	f.Add(readTestdata(f, "sockperf_pp_refused.txt"), []byte{})
	f.Fuzz(func(t *testing.T, summary, fullLog []byte) {
		got, err := ParseSockperf(summary, fullLog)
		if (got == nil) == (err == nil) {
			t.Fatalf("ParseSockperf = %v, %v: want exactly one of record and error", got, err)
		}
	})
}
