package load

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNetperfRRArgs(t *testing.T) {
	const sel = "MIN_LATENCY,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY,MAX_LATENCY,STDDEV_LATENCY,TRANSACTION_RATE,ELAPSED_TIME"
	for _, tc := range []struct {
		name string
		n    NetperfRR
		want string
	}{
		{"v4 defaults", NetperfRR{Server: v4Server, Duration: 2 * time.Second},
			"netperf -H 198.18.0.2 -p 12865 -l 2 -t TCP_RR -4 -- -k " + sel},
		{"v6 with sizes", NetperfRR{Server: v6Server, Port: 12000, Duration: 10 * time.Second, RequestSize: 64, ResponseSize: 1024},
			"netperf -H 2001:2::2 -p 12000 -l 10 -t TCP_RR -6 -- -r 64,1024 -k " + sel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.n.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(strings.Fields(tc.want), tc.n.Args()); diff != "" {
				t.Errorf("Args() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []NetperfRR{
		{Duration: time.Second},
		{Server: v4Server},
		{Server: v4Server, Duration: 1500 * time.Millisecond},
		{Server: v4Server, Duration: time.Second, RequestSize: -1},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", bad)
		}
	}
}

// netperf cannot be installed here: these samples are hand-written from the
// manual (testdata/netperf_rr_manual_example*.txt), not captured.
func TestParseNetperfRRManualExamples(t *testing.T) {
	for _, tc := range []struct {
		file    string
		samples int64
	}{
		{"netperf_rr_manual_example.txt", 65530}, // -k: 32765.06 trans/s * 2.00 s
		{"netperf_rr_manual_example_csv.txt", 0}, // -o without ELAPSED_TIME
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseNetperfRR(readTestdata(t, tc.file))
			if err != nil {
				t.Fatalf("ParseNetperfRR: %v", err)
			}
			if got.Tool != "netperf" || got.Min != 21 || got.Mean != 30.52 || got.P50 != 28 ||
				got.P90 != 35 || got.P99 != 71 || got.Max != 1204 || got.StdDev != 12.31 {
				t.Errorf("got %+v", got)
			}
			if got.Samples != tc.samples {
				t.Errorf("samples %d, want %d", got.Samples, tc.samples)
			}
			checkCDF(t, got, 5)
		})
	}
}

func TestParseNetperfRRErrors(t *testing.T) {
	var te *ToolError
	_, err := ParseNetperfRR(readTestdata(t, "netperf_rr_manual_example_refused.txt"))
	if !errors.As(err, &te) || !strings.Contains(te.Message, "are you sure there is a netserver listening") {
		t.Errorf("refused: err = %v, want *ToolError quoting netperf", err)
	}
	for _, tc := range []struct{ name, out, contains string }{
		{"empty", "", "empty"},
		{"banner only", "MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET\n", "no latency values"},
		{"missing p99", "MIN_LATENCY=1\nMEAN_LATENCY=2\nP50_LATENCY=2\nP90_LATENCY=3\nMAX_LATENCY=9\n", "no P99_LATENCY"},
		{"csv value count", "Minimum Latency Microseconds,Mean Latency Microseconds\n21\n", "2 column titles but 1 values"},
	} {
		if _, err := ParseNetperfRR([]byte(tc.out)); err == nil || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.contains)
		}
	}
}
