package render

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/summary"
)

// referenceRun is the local fixture run with a scenario that carries a
// reference block and a method the run skipped.
func referenceRun() RunRecords {
	run, cells := fixture.LocalRun()
	run.Scenario = `methods: [native, vxlan, srv6]
repetitions: 3
skipped:
  - {method: geneve, reason: "CONFIG_GENEVE missing (fix: a kernel with CONFIG_GENEVE, or the kernel lab: --testbed vm)"}
reference:
  source: 'seed 000: Kannan et al.'
  figures:
    - {method: native, test: tcp_stream, metric: throughput, value: 23.6, unit: Gbit/s, streams: 1, setup: intra-rack, testbed: one-machine, cite: "Fig. 16"}
    - {method: vxlan, test: tcp_stream, metric: throughput, value: 20000, unit: Mbit/s, streams: 1, setup: intra-rack, testbed: one-machine, cite: "Fig. 16"}
    - {method: srv6, test: tcp_rr, metric: p50_rtt, value: 0.0258, unit: ms, cite: "Table 1", quote: "about 26 us"}
    - {method: geneve, test: tcp_stream, metric: throughput, value: 23.5, unit: Gbit/s, cite: "Fig. 16"}
    - {method: ipip, test: tcp_stream, metric: throughput, value: 5, unit: Gbit/s, cite: "Fig. 16"}
    - {method: native, test: tcp_stream, metric: throughput, value: 1, unit: Gbit/s, streams: 8, cite: "Fig. 6"}
`
	return RunRecords{Run: run, Cells: cells}
}

// Every published figure is set beside ours with the ratio; on a testbed
// of the paper's class native's absolute value is judged, a tunnel's
// share of native against ours (the paper's value outside our interval
// disagrees, inside agrees); a figure the paper gives no native for is not
// judged; a figure the run did not measure says why (skipped with the
// reason, not in the methods, no matching condition).
func TestReferences(t *testing.T) {
	rr := referenceRun()
	rows := summary.Aggregate(rr.Run, rr.Cells)
	native := find(t, rows, "native", 1500)
	tpFig := "20250314T092653-3f9c-throughput-time-native-" + summary.BaselineOf(native.Params).Slug()
	refs := summary.BuildReferences(rr.Run, rows, []string{tpFig})
	if refs.Source != "seed 000: Kannan et al." || len(refs.Rows) != 6 {
		t.Fatalf("source %q, %d rows: %+v", refs.Source, len(refs.Rows), refs.Rows)
	}
	n, v, s, g, ip, none := refs.Rows[0], refs.Rows[1], refs.Rows[2], refs.Rows[3], refs.Rows[4], refs.Rows[5]

	if n.Ours.Mean != native.Throughput.Mean || n.Disagree || n.Judged != summary.JudgedAbsolute || !strings.HasPrefix(n.Note, "absolute agrees") || n.Figure != tpFig {
		t.Errorf("native inside our interval: %+v", n)
	}
	if want := native.Throughput.Mean / 23.6; math.Abs(n.Ratio-want) > 1e-9 {
		t.Errorf("native ratio %v, want %v", n.Ratio, want)
	}
	// 20000 Mbit/s: ours is shown in the paper's unit.
	vx := find(t, rows, "vxlan", 1500)
	// Judged relative to native: the paper's 20000 of 23600 Mbit/s
	// (84.7%) against ours, 46.3% of our native.
	if math.Abs(v.Ours.Mean-1000*vx.Throughput.Mean) > 1e-6 || v.Unit != "Mbit/s" || !v.Disagree || v.Judged != summary.JudgedRelative ||
		math.Abs(v.PaperNative-23600) > 1e-6 || math.Abs(v.PaperPercent-100*20000.0/23600) > 1e-9 ||
		math.Abs(v.OursPercent.Mean-100*vx.Throughput.Mean/native.Throughput.Mean) > 1e-9 ||
		!strings.Contains(v.Note, "relative disagrees: ours relative to native is 0.547× the paper's, which lies outside our 95% interval") {
		t.Errorf("vxlan against 20000 Mbit/s: %+v (ours %v Gbit/s)", v, vx.Throughput)
	}
	sr := find(t, rows, "srv6", 1500)
	if math.Abs(s.Ours.Mean-sr.P50RTT.Mean/1000) > 1e-9 || s.Unit != "ms" || s.Disagree || s.Judged != "" ||
		!strings.Contains(s.Note, "not judged: the paper gives no native for this setup and condition") {
		t.Errorf("srv6 p50 RTT in ms: %+v (ours %v us)", s, sr.P50RTT)
	}
	if len(refs.Rankings) != 1 || !strings.HasSuffix(refs.Rankings[0], "the paper's native > vxlan, ours native > vxlan: the same order") {
		t.Errorf("rankings: %q", refs.Rankings)
	}
	if g.Ours.N != 0 || !strings.Contains(g.Note, "not measured: the run skipped geneve (CONFIG_GENEVE missing") {
		t.Errorf("skipped geneve: %+v", g)
	}
	if ip.Ours.N != 0 || ip.Note != "not measured: ipip is not in this run's methods" {
		t.Errorf("ipip: %+v", ip)
	}
	if none.Ours.N != 0 || !strings.Contains(none.Note, "no native row of this run has the tcp_stream throughput under this condition") {
		t.Errorf("native at 8 streams: %+v", none)
	}
}

// The HTML sets the paper's numbers in the figure that draws ours and in
// a table after the summary, both of class "reference", and names the
// skipped method with its reason; so does the text table.
func TestReferencesRendered(t *testing.T) {
	rr := referenceRun()
	b, err := Build([]RunRecords{rr}, "report-files")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := b.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	fig := regexp.MustCompile(`(?s)<figure id="[^"]*-throughput-time-native-[^"]*">.*?</figure>`).FindString(html)
	if !strings.Contains(fig, `<table class="reference">`) || !strings.Contains(fig, "23.6 Gbit/s") {
		t.Errorf("native's throughput figure lacks the paper's number:\n%s", fig)
	}
	if n := strings.Count(html, `<table class="reference">`); n < 2 {
		t.Errorf("%d reference tables, want the run's and at least one figure's", n)
	}
	for _, want := range []string{
		"The paper's numbers beside ours</h3>", "seed 000: Kannan et al.", `<tr class="disagree">`,
		"Skipped method geneve (--skip-unavailable), not measured: CONFIG_GENEVE missing",
		"intra-rack; Fig. 16", "Table 1: &#34;about 26 us&#34;",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}

	var tb bytes.Buffer
	if err := summary.Table(&tb, rr.Run, rr.Cells, summary.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	text := tb.String()
	for _, want := range []string{
		"the paper's numbers beside ours (seed 000: Kannan et al.); each as % of its own native",
		"native tcp_stream throughput (1 stream): paper 23.6 Gbit/s, ours 23.7 ± ",
		"vxlan tcp_stream throughput (1 stream): paper 20000 Mbit/s (84.7% of its native), ours 10957 ± 4217 (46.3 ± 17.9% of",
		"Skipped method geneve (--skip-unavailable), not measured: CONFIG_GENEVE missing",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if summary.Runes(l) > summary.MaxWidth {
			t.Errorf("line wider than %d: %q", summary.MaxWidth, l)
		}
	}
}

// A run without a reference block shows none.
func TestNoReference(t *testing.T) {
	run, cells := fixture.LocalRun()
	if refs := summary.BuildReferences(run, summary.Aggregate(run, cells), nil); len(refs.Rows) != 0 {
		t.Errorf("references without a block: %+v", refs)
	}
	var tb bytes.Buffer
	if err := summary.Table(&tb, run, cells, summary.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tb.String(), "paper") {
		t.Errorf("table mentions a paper:\n%s", tb.String())
	}
}

// The parallel and udp_sizes metrics: the peak is the best stream count,
// % of line rate and of native come from the parallel test's rows, the
// UDP figures from the frame size's.
func TestReferencesTests(t *testing.T) {
	run, cells := fixture.TestsRun()
	// native at 128 streams too, slower: the peak stays at 256.
	for _, c := range cells {
		if c.Method == "native" {
			c.Key = "native/ipv4/mtu1500/offloads-on/p128"
			c.Params.Streams = 128
			p := *c.Parallel
			p.Streams, p.BitsPerSecond = 128, p.BitsPerSecond/2
			c.Parallel = &p
			cells = append(cells, c)
		}
	}
	run.Scenario += `reference:
  source: a paper
  figures:
    - {method: native, test: parallel, metric: peak_throughput, value: 16, unit: Gbit/s, cite: "Fig. 14a"}
    - {method: native, test: parallel, metric: percent_of_line_rate, value: 87, unit: "%", streams: 256, cite: "Fig. 15a"}
    - {method: vxlan, test: parallel, metric: percent_of_native, value: 56, unit: "%", streams: 256, cite: "Fig. 6"}
    - {method: vxlan, test: udp_sizes, metric: packets_per_second, value: 0.4, unit: Mpackets/s, frame: 64, cite: "Fig. 3"}
    - {method: vxlan, test: udp_sizes, metric: delay_p50, value: 0.01, unit: ms, frame: 512, cite: "Fig. 4"}
    - {method: vxlan, test: udp_sizes, metric: jitter, value: 1.5, unit: us, frame: 9000, cite: "Fig. 5"}
`
	rows := summary.Aggregate(run, cells)
	refs := summary.BuildReferences(run, rows, nil)
	if len(refs.Rows) != 6 {
		t.Fatalf("%d rows: %+v", len(refs.Rows), refs.Rows)
	}
	want := []struct {
		mean    float64
		row     string
		measure bool
	}{
		{21.85, "native, 256 streams", true},
		{100 * 21.85 / 25, "native, 256 streams", true},
		{100 * 12.35 / 21.85, "vxlan", true},
		{0.4 * 1.015, "vxlan", true},
		{0.01, "vxlan", true},
		{0, "", false},
	}
	for i, w := range want {
		r := refs.Rows[i]
		if (r.Ours.N > 0) != w.measure || math.Abs(r.Ours.Mean-w.mean) > 1e-6*math.Max(1, w.mean) || !strings.HasPrefix(r.Row, strings.Split(w.row, ",")[0]) {
			t.Errorf("%s %s: ours %v (row %q), want %v (%s)", r.Ref.Method, r.Ref.Metric, r.Ours.Mean, r.Row, w.mean, w.row)
		}
	}
	if r := refs.Rows[0]; r.Key != "native/ipv4/mtu1500/offloads-on/p256" {
		t.Errorf("peak taken from %s, want the 256-stream row", r.Key)
	}
	if r := refs.Rows[5]; !strings.Contains(r.Note, "no vxlan row of this run has the udp_sizes jitter") {
		t.Errorf("jitter at a frame the run lacks: %q", r.Note)
	}
}
