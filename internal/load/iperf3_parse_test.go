package load

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/testenv"
)

// The wanted figures are read off the captured files (testdata/capture.sh);
// rerunning the capture changes them and these tables with them.
func TestParseIperf3(t *testing.T) {
	for _, tc := range []struct {
		file           string
		bps, senderBps float64
		bytes          int64
		retransmits    int64
		seconds        float64
		intervals      int
		omitted        int
		senderCPU      float64
		receiverCPU    float64
		reverse        bool
	}{{
		file: "iperf3_tcp4_omit.json", // -t 3 -O 1
		bps:  9859554033.083336, senderBps: 9859133599.10702, bytes: 3698524536,
		retransmits: 2307, seconds: 3.000967, intervals: 4, omitted: 1,
		senderCPU: 79.5864172778342, receiverCPU: 41.574373504945754,
	}, {
		file: "iperf3_tcp4_p4.json", // -t 2 -O 1 -P 4: intervals are the sums over streams
		bps:  24588262915.27531, senderBps: 24586427279.426544, bytes: 6149373952,
		retransmits: 2737, seconds: 2.000751, intervals: 3, omitted: 1,
		senderCPU: 96.42489280666874, receiverCPU: 60.9261638779626,
	}, {
		file: "iperf3_tcp6.json",
		bps:  9748310722.08098, senderBps: 9752189304.80054, bytes: 2439116296,
		retransmits: 3383, seconds: 2.001673, intervals: 2,
		senderCPU: 66.5584683066682, receiverCPU: 46.8475575090199,
	}, {
		// -R: the server sends, so its ("remote") CPU is the sender's, and
		// the client's intervals are receiver-side (no retransmits).
		file: "iperf3_tcp4_reverse.json", reverse: true,
		bps: 12222361994.647034, senderBps: 12223108143.909288, bytes: 3055610360,
		retransmits: 3670, seconds: 2.000013, intervals: 2,
		senderCPU: 89.89557871585315, receiverCPU: 42.768530719671475,
	}, {
		file: "iperf3_udp4.json", // -u -b 200M
		bps:  199909758.96428582, senderBps: 199917055.05032074, bytes: 49983512,
		retransmits: 0, seconds: 2.000243, intervals: 2,
		senderCPU: 20.675443251513816, receiverCPU: 12.544925432156537,
	}} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseIperf3(readTestdata(t, tc.file))
			if err != nil {
				t.Fatalf("ParseIperf3: %v", err)
			}
			if got.Tool != "iperf3" || got.Version != "3.12" {
				t.Errorf("tool %q version %q, want iperf3 3.12", got.Tool, got.Version)
			}
			if got.BitsPerSecond != tc.bps || got.SenderBitsPerSecond != tc.senderBps {
				t.Errorf("bits/s receiver %v sender %v, want %v %v", got.BitsPerSecond, got.SenderBitsPerSecond, tc.bps, tc.senderBps)
			}
			if got.Bytes != tc.bytes || got.Retransmits != tc.retransmits || got.Seconds != tc.seconds {
				t.Errorf("bytes %d retransmits %d seconds %v, want %d %d %v",
					got.Bytes, got.Retransmits, got.Seconds, tc.bytes, tc.retransmits, tc.seconds)
			}
			if got.SenderToolCPUPercent != tc.senderCPU || got.ReceiverToolCPUPercent != tc.receiverCPU {
				t.Errorf("tool CPU sender %v receiver %v, want %v %v",
					got.SenderToolCPUPercent, got.ReceiverToolCPUPercent, tc.senderCPU, tc.receiverCPU)
			}
			omitted := 0
			var ivBytes, ivRetrans int64
			for i, iv := range got.Intervals {
				if iv.Omitted {
					omitted++
					if i >= tc.omitted {
						t.Errorf("interval %d is omitted but follows measured ones", i)
					}
					continue
				}
				if iv.End <= iv.Start || iv.BitsPerSecond <= 0 {
					t.Errorf("interval %d: %+v is not a plausible measured second", i, iv)
				}
				ivBytes += iv.Bytes
				ivRetrans += iv.Retransmits
			}
			if len(got.Intervals) != tc.intervals || omitted != tc.omitted {
				t.Errorf("%d intervals (%d omitted), want %d (%d)", len(got.Intervals), omitted, tc.intervals, tc.omitted)
			}
			// The totals are those of the measured (non-omitted) intervals.
			if !nearRel(float64(ivBytes), float64(got.Bytes), 0.01) {
				t.Errorf("measured intervals carry %d bytes, total says %d", ivBytes, got.Bytes)
			}
			if !tc.reverse && ivRetrans != got.Retransmits {
				t.Errorf("measured intervals have %d retransmits, total says %d", ivRetrans, got.Retransmits)
			}
			if !nearRel(got.BitsPerSecond, float64(got.Bytes)*8/got.Seconds, 0.001) {
				t.Errorf("bits/s %v disagrees with %d bytes in %v s", got.BitsPerSecond, got.Bytes, got.Seconds)
			}
		})
	}
}

// A real report of a test that ran but whose receiver got nothing
// (boringtun at underlay MTU 9000, issue 39): the parser reports it as it
// is, 0 bytes received and what the sender claimed; that such a test
// fails the cell is the runner's verdict (nothingReceived), since the
// mtu_probe test reads a stalled transfer as its finding.
func TestParseIperf3NothingReceived(t *testing.T) {
	got, err := ParseIperf3(readTestdata(t, "iperf3_tcp4_nothing_received.json"))
	if err != nil {
		t.Fatalf("ParseIperf3: %v", err)
	}
	if got.Bytes != 0 || got.BitsPerSecond != 0 || got.Seconds != 1.001338 {
		t.Errorf("received %d bytes, %v bit/s in %v s, want 0, 0 in 1.001338", got.Bytes, got.BitsPerSecond, got.Seconds)
	}
	if got.SenderBitsPerSecond != 2630059.9168476425 || got.Retransmits != 4 {
		t.Errorf("sender %v bit/s, %d retransmits, want 2630059.9168476425 and 4", got.SenderBitsPerSecond, got.Retransmits)
	}
	// The client sends: its one interval is the sender's view.
	if len(got.Intervals) != 1 || got.Intervals[0].Bytes != 329104 {
		t.Errorf("intervals %+v, want one of 329104 bytes sent", got.Intervals)
	}
}

func TestParseIperf3Errors(t *testing.T) {
	// A real report with iperf3's "error" key added: iperf3 writes one next
	// to partial results when the test breaks off midway.
	var partial map[string]any
	if err := json.Unmarshal(readTestdata(t, "iperf3_tcp4_omit.json"), &partial); err != nil {
		t.Fatal(err)
	}
	partial["error"] = "control socket has closed unexpectedly"
	partialJSON, err := json.Marshal(partial)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		data     []byte
		toolMsg  string // want a *ToolError with this message
		contains string // else want an error containing this
	}{
		{name: "connection refused (real)", data: readTestdata(t, "iperf3_refused.json"),
			toolMsg: "unable to connect to server: Connection refused"},
		{name: "error next to partial data", data: partialJSON,
			toolMsg: "control socket has closed unexpectedly"},
		{name: "truncated (real report cut in half)", data: readTestdata(t, "iperf3_truncated.json"),
			contains: "truncated"},
		{name: "empty", data: []byte(" \n"), contains: "empty"},
		{name: "not JSON", data: []byte("iperf3: error - unable to connect"), contains: "parse iperf3 output"},
		{name: "no end summary", data: []byte(`{"start":{"version":"iperf 3.12"},"intervals":[],"end":{}}`),
			contains: "no end summary"},
		{name: "JSON null", data: []byte("null"), contains: "no end summary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseIperf3(tc.data)
			if err == nil {
				t.Fatalf("ParseIperf3 = %+v, want an error", got)
			}
			if got != nil {
				t.Errorf("ParseIperf3 returned a record with its error: %+v", got)
			}
			var te *ToolError
			if tc.toolMsg != "" {
				if !errors.As(err, &te) || te.Tool != "iperf3" || te.Message != tc.toolMsg {
					t.Fatalf("error %v, want *ToolError quoting %q", err, tc.toolMsg)
				}
				if !strings.Contains(err.Error(), tc.toolMsg) {
					t.Errorf("error text %q does not quote iperf3", err)
				}
				return
			}
			if errors.As(err, &te) {
				t.Errorf("error %v is a *ToolError; iperf3 reported nothing", err)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not contain %q", err, tc.contains)
			}
		})
	}
}

func TestParseIperf3UDP(t *testing.T) {
	got, err := ParseIperf3UDP(readTestdata(t, "iperf3_udp4.json"))
	if err != nil {
		t.Fatalf("ParseIperf3UDP: %v", err)
	}
	want := UDPStats{JitterMillis: 0.00869288376927511, LostPackets: 0, Packets: 34519, LostPercent: 0}
	if *got != want {
		t.Errorf("got %+v, want %+v", *got, want)
	}
	if _, err := ParseIperf3UDP(readTestdata(t, "iperf3_tcp4_omit.json")); err == nil || !strings.Contains(err.Error(), "not UDP") {
		t.Errorf("TCP report: err = %v, want a not-UDP error", err)
	}
	var te *ToolError
	if _, err := ParseIperf3UDP(readTestdata(t, "iperf3_refused.json")); !errors.As(err, &te) {
		t.Errorf("refused report: err = %v, want *ToolError", err)
	}
}

func FuzzParseIperf3(f *testing.F) {
	testenv.FuzzSeeds(f, "iperf3_*.json")
	f.Add([]byte(""))
	f.Add([]byte("{}"))
	f.Add([]byte(`{"end":{"sum_sent":{"bytes":1e300},"sum_received":{"bytes":-1e300}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseIperf3(data)
		if (got == nil) == (err == nil) {
			t.Fatalf("ParseIperf3 = %v, %v: want exactly one of record and error", got, err)
		}
		if got != nil && got.Tool != "iperf3" {
			t.Fatalf("tool %q", got.Tool)
		}
	})
}

func BenchmarkParseIperf3(b *testing.B) {
	data := readTestdata(b, "iperf3_tcp4_p4.json")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseIperf3(data); err != nil {
			b.Fatal(err)
		}
	}
}
