package load

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRR(t *testing.T) {
	// Figures of the captured reports (testdata/rr_tcp*.json, 14-byte
	// request and response, 1 s over the veth pair of TestRRRealRun).
	for _, tc := range []struct {
		file                              string
		samples                           int64
		min, mean, stddev, p50, p90, p99  float64
		p25, p75, p999, p9999, p99999, mx float64
	}{
		{file: "rr_tcp4.json", samples: 32155,
			min: 19.048, mean: 30.967, stddev: 17.882, p50: 24.086, p90: 57.968, p99: 90.809,
			p25: 22.994, p75: 26.355, p999: 155.36, p9999: 250.7, p99999: 725.289, mx: 832.624},
		{file: "rr_tcp6.json", samples: 15445,
			min: 19.398, mean: 64.653, stddev: 571.412, p50: 27.07, p90: 82.908, p99: 376.769,
			p999: 3510.315, p9999: 27020.079, p99999: 49943.932, mx: 53954.559},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseRR(readTestdata(t, tc.file))
			if err != nil {
				t.Fatalf("ParseRR: %v", err)
			}
			if got.Tool != "tunbench-rr" || got.Version != "1" || got.Samples != tc.samples {
				t.Errorf("tool %q version %q samples %d, want tunbench-rr 1 %d", got.Tool, got.Version, got.Samples, tc.samples)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"min", got.Min, tc.min}, {"mean", got.Mean, tc.mean}, {"stddev", got.StdDev, tc.stddev},
				{"p50", got.P50, tc.p50}, {"p90", got.P90, tc.p90}, {"p99", got.P99, tc.p99}, {"max", got.Max, tc.mx},
			} {
				if f.got != f.want {
					t.Errorf("%s = %v µs, want %v", f.name, f.got, f.want)
				}
			}
			if len(got.CDF) != len(cdfFractions) {
				t.Fatalf("CDF has %d points, want %d", len(got.CDF), len(cdfFractions))
			}
			// The same points as the sockperf parser's CDF, so both draw alike.
			at := map[float64]float64{}
			for i, q := range got.CDF {
				if q.Fraction != cdfFractions[i] {
					t.Errorf("CDF point %d at fraction %v, want %v", i, q.Fraction, cdfFractions[i])
				}
				at[q.Fraction] = q.RTT
			}
			want := map[float64]float64{0: tc.min, 0.5: tc.p50, 0.9: tc.p90, 0.99: tc.p99,
				0.999: tc.p999, 0.9999: tc.p9999, 0.99999: tc.p99999, 1: tc.mx}
			if tc.p25 != 0 {
				want[0.25], want[0.75] = tc.p25, tc.p75
			}
			for f, w := range want {
				if at[f] != w {
					t.Errorf("CDF at %v = %v µs, want %v", f, at[f], w)
				}
			}
		})
	}
}

func TestParseRRErrors(t *testing.T) {
	good := string(readTestdata(t, "rr_tcp4.json"))
	for _, tc := range []struct {
		name     string
		out      string
		wantTool string // *ToolError message, or "" for a plain error
		wantErr  string
	}{
		{name: "refused", out: string(readTestdata(t, "rr_refused.json")),
			wantTool: "rr client: connect 198.18.0.2:12899: connection refused"},
		{name: "server gone", out: string(readTestdata(t, "rr_server_gone.json")),
			wantTool: "rr client: 198.18.0.2:12867: warm-up transaction 667: server closed the connection: connection reset by peer"},
		{name: "stderr instead of stdout", out: "rr client: connect 198.18.0.2:12899: connection refused\n",
			wantTool: "rr client: connect 198.18.0.2:12899: connection refused"},
		{name: "truncated", out: string(readTestdata(t, "rr_truncated.json")), wantErr: "truncated after 1960 bytes"},
		{name: "empty", out: " \n", wantErr: "output is empty"},
		{name: "not json", out: "panic: runtime error\n\ngoroutine 1", wantErr: `not a JSON report: "panic: runtime error"`},
		{name: "two reports", out: good + good, wantErr: "more than one report"},
		{name: "other tool", out: strings.Replace(good, `"tunbench-rr"`, `"sockperf"`, 1), wantErr: `report of tool "sockperf"`},
		{name: "wrong type", out: strings.Replace(good, `"transactions":32155`, `"transactions":"many"`, 1), wantErr: "cannot unmarshal"},
		{name: "no transactions", out: strings.Replace(good, `"transactions":32155`, `"transactions":0`, 1), wantErr: "0 transactions"},
		{name: "cdf out of order", out: strings.Replace(good, `"rtt_us":24.086`, `"rtt_us":99`, 1), wantErr: "CDF not ascending at point 51"},
		{name: "no cdf", out: `{"tool":"tunbench-rr","transactions":1,"duration_s":1}`, wantErr: "CDF does not run from fraction 0 to 1"},
		{name: "inconsistent", out: strings.Replace(good, `"p50_rtt_us":24.086`, `"p50_rtt_us":1`, 1), wantErr: "inconsistent RTTs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRR([]byte(tc.out))
			if err == nil {
				t.Fatalf("ParseRR = %+v, want an error", got)
			}
			if got != nil {
				t.Errorf("ParseRR returned a record with its error: %+v", got)
			}
			var te *ToolError
			isTool := errors.As(err, &te)
			switch {
			case tc.wantTool != "":
				if !isTool || te.Tool != "tunbench-rr" || te.Message != tc.wantTool {
					t.Errorf("err = %v, want *ToolError %q", err, tc.wantTool)
				}
			case isTool || !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("err = %v, want a plain error with %q", err, tc.wantErr)
			}
		})
	}
}
