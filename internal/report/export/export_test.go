package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/stats"
)

// unitSuffixes are the endings that name a unit in a key.
var unitSuffixes = []string{"_gbps", "_us", "_cores", "_percent", "_bytes", "_s", "_bps", "_core"}

// unitless are summary keys whose values are counts, flags or names.
var unitless = map[string]bool{
	"repetitions": true, "repetitions_ok": true, "repetitions_failed": true, "repetitions_skipped": true,
	"repetition": true, "streams": true,
}

func hasUnit(key string) bool {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}

// checkUnits walks a decoded summary row: every number is either under a
// key naming its unit, a count, or inside a figure object (which carries
// "unit" and sits under a key naming it).
func checkUnits(t *testing.T, path string, v any) {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, val := range obj {
		p := path + "." + k
		switch val := val.(type) {
		case float64:
			if !hasUnit(k) && !unitless[k] {
				t.Errorf("%s is a number without a unit in its key", p)
			}
		case map[string]any:
			if _, isFigure := val["mean"]; isFigure {
				if !hasUnit(k) || val["unit"] == nil {
					t.Errorf("figure %s must name its unit in its key and carry a unit field", p)
				}
				continue
			}
			checkUnits(t, p, val)
		}
	}
}

func TestJSONDocument(t *testing.T) {
	run, cells := fixture.LocalRun()
	var b bytes.Buffer
	if err := JSON(&b, run, cells); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema   string           `json:"schema"`
		Run      result.Run       `json:"run"`
		Cells    []result.Cell    `json:"cells"`
		Summary  []map[string]any `json:"summary"`
		Emulated bool             `json:"emulated"`
		Warnings []string         `json:"warnings"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != result.SchemaVersion {
		t.Errorf("schema = %q, want %q", doc.Schema, result.SchemaVersion)
	}
	if diff := cmp.Diff(cells, doc.Cells); diff != "" {
		t.Errorf("cells do not survive the export (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(run, doc.Run); diff != "" {
		t.Errorf("run does not survive the export (-want +got):\n%s", diff)
	}
	if len(doc.Summary) != 3 {
		t.Fatalf("summary has %d rows, want 3", len(doc.Summary))
	}
	for i, row := range doc.Summary {
		checkUnits(t, "summary["+string(rune('0'+i))+"]", row)
	}
	vx := doc.Summary[1]
	if vx["method"] != "vxlan" || vx["unstable"] != true {
		t.Errorf("second row: method %v unstable %v; want vxlan flagged unstable", vx["method"], vx["unstable"])
	}
	if got := vx["throughput_gbps"].(map[string]any)["cv_percent"].(float64); got < 10 {
		t.Errorf("vxlan cv_percent = %v, want above 10", got)
	}
	srv6 := doc.Summary[2]
	if srv6["repetitions_failed"] != 1.0 || srv6["problems"] == nil {
		t.Errorf("srv6 failed %v problems %v; want one failure listed", srv6["repetitions_failed"], srv6["problems"])
	}
	if doc.Emulated {
		t.Error("local run exported as emulated")
	}
}

func TestJSONNoNativeAndEmulated(t *testing.T) {
	run, cells := fixture.EmulatedRun()
	d := NewDocument(run, cells)
	if !d.Emulated || len(d.Warnings) == 0 || d.Warnings[0] != summary.EmulatedNote+"." {
		t.Errorf("emulated %v, warnings %q; want emulated and the note first", d.Emulated, d.Warnings)
	}
	var b bytes.Buffer
	if err := JSON(&b, run, cells); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"percent_of_native_percent": null`) {
		t.Error("without native, percent_of_native_percent should be null")
	}
	if !strings.Contains(b.String(), "figures measure function, not performance") {
		t.Error("emulated export does not say plainly that figures measure function")
	}
}

func TestJSONSingleRepetitionHasNoInterval(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, result.Run{ID: "one"}, []result.Cell{fixture.OkCell("vxlan", 1500, 1, 8)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "ci95") || strings.Contains(b.String(), "stddev") {
		t.Errorf("n=1 figures must not carry an interval or spread:\n%s", b.String())
	}
}

func TestWideCSV(t *testing.T) {
	run, cells := fixture.LocalRun()
	var b bytes.Buffer
	if err := WideCSV(&b, run, cells); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(cells)+1 {
		t.Fatalf("%d records, want header + %d cells", len(recs), len(cells))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"method", "repetition", "status", "family", "underlay_mtu_bytes",
		"overlay_mtu_bytes", "offloads", "throughput_bps", "retransmits", "p50_rtt_us", "p99_rtt_us",
		"sender_cores", "receiver_cores", "busy_avg_percent", "background_busy_percent", "emulated", "error"} {
		if _, ok := col[h]; !ok {
			t.Errorf("CSV header lacks %q", h)
		}
	}
	failed := recs[8] // srv6 repetition 2
	if failed[col["status"]] != "failed" || failed[col["throughput_bps"]] != "" || failed[col["error"]] == "" {
		t.Errorf("failed row: status %q throughput %q error %q; want failed, empty, the error",
			failed[col["status"]], failed[col["throughput_bps"]], failed[col["error"]])
	}
	if got := recs[1][col["throughput_bps"]]; got != "23410000000" {
		t.Errorf("first throughput_bps = %q, want 23410000000 (plain digits, bits per second)", got)
	}
}

// TestTidyCSV: one row per measured value with its unit and every
// parameter; a failed repetition is one row with its error.
func TestTidyCSV(t *testing.T) {
	run, cells := fixture.LocalRun()
	var b bytes.Buffer
	if err := CSV(&b, run, cells); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"run_id", "method", "repetition", "family", "underlay_mtu_bytes", "overlay_mtu_bytes",
		"offloads", "streams", "duration_s", "latency_tool", "pin", "background_busy", "metric", "value", "unit", "error"} {
		if _, ok := col[h]; !ok {
			t.Errorf("CSV header lacks %q", h)
		}
	}
	var failed, tput int
	units := map[string]string{}
	for _, r := range recs[1:] {
		if len(r) != len(recs[0]) {
			t.Fatalf("ragged row %q", r)
		}
		m := r[col["metric"]]
		if m == "" {
			failed++
			if r[col["status"]] != "failed" || r[col["error"]] == "" || r[col["value"]] != "" {
				t.Errorf("row without a metric: %q", r)
			}
			continue
		}
		if u, ok := units[m]; ok && u != r[col["unit"]] {
			t.Errorf("metric %s has units %s and %s", m, u, r[col["unit"]])
		}
		units[m] = r[col["unit"]]
		if m == "throughput" {
			tput++
			if tput == 1 && r[col["value"]] != "23410000000" {
				t.Errorf("first throughput = %q, want 23410000000 (plain digits, bit/s)", r[col["value"]])
			}
		}
	}
	if failed != 1 || tput != 8 {
		t.Errorf("%d failed rows (want 1), %d throughput rows (want 8)", failed, tput)
	}
	for m, want := range map[string]string{"throughput": "bit/s", "p99_rtt": "us", "sender_cpu": "cores", "busy_avg": "percent", "retransmits": "count"} {
		if units[m] != want {
			t.Errorf("unit of %s = %q, want %q", m, units[m], want)
		}
	}
}

// TestSpreadCSV: a parallel test spread over the tunnels (--spread) says
// so in both CSVs, and the tidy one gives each process the tunnel it
// crossed and what that tunnel's device received (none when the counters
// could not be read); an unspread cell says spread false and names no
// tunnel.
func TestSpreadCSV(t *testing.T) {
	run, cells := fixture.ScaleRun()
	var spread result.Cell
	for _, c := range cells {
		if c.Method == "vxlan" && c.Params.Tunnels == 100 {
			spread = c
			break
		}
	}
	plain := spread
	spread.Params.Spread = true
	spread.Parallel = &result.Parallel{Streams: 2, StreamsPerProcess: 1, BitsPerSecond: 2e9,
		Processes: []result.ProcessThroughput{{Port: 5201, Streams: 1, BitsPerSecond: 1e9}, {Port: 5202, Streams: 1, BitsPerSecond: 1e9}},
		Tunnels: []result.SpreadTunnel{{Tunnel: 0, Address: "198.19.128.1", Device: "tb5ca1-vx0", RxBytes: 125000000},
			{Tunnel: 99, Address: "198.19.128.199", Device: "tb5ca1-vx99", Error: "no device holds 198.19.128.199"}}}
	plain.Repetition = spread.Repetition + 1
	plain.Parallel = &result.Parallel{Streams: 1, StreamsPerProcess: 1, BitsPerSecond: 1e9,
		Processes: []result.ProcessThroughput{{Port: 5201, Streams: 1, BitsPerSecond: 1e9}}}
	both := []result.Cell{spread, plain}

	var wide bytes.Buffer
	if err := WideCSV(&wide, run, both); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&wide).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(recs[0], "spread")
	if col < 0 || recs[1][col] != "true" || recs[2][col] != "false" {
		t.Errorf("wide CSV spread column %d: %q, %q; want true, false", col, recs[1][max(col, 0)], recs[2][max(col, 0)])
	}

	var tidy bytes.Buffer
	if err := CSV(&tidy, run, both); err != nil {
		t.Fatal(err)
	}
	recs, err = csv.NewReader(&tidy).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for i, h := range recs[0] {
		idx[h] = i
	}
	var got []string
	for _, r := range recs[1:] {
		isSpread := r[idx["repetition"]] == strconv.Itoa(spread.Repetition)
		if r[idx["spread"]] != strconv.FormatBool(isSpread) {
			t.Errorf("tidy row of the %s cell says spread %q: %q", map[bool]string{true: "spread", false: "unspread"}[isSpread], r[idx["spread"]], r)
		}
		if m := r[idx["metric"]]; strings.HasPrefix(m, "process_tunnel") {
			got = append(got, strings.Join([]string{r[idx["spread"]], r[idx["process_port"]], m, r[idx["value"]], r[idx["unit"]]}, " "))
		}
	}
	want := []string{
		"true 5201 process_tunnel 0 count",
		"true 5201 process_tunnel_rx_bytes 125000000 bytes",
		"true 5202 process_tunnel 99 count",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tidy CSV's tunnel rows (-want +got):\n%s", diff)
	}
}

// TestPacingWarning: a local run whose host used BBR gets the warning that
// BBR's pacing can hold veth throughput down; cubic, or another testbed
// (the vm guest has its own default), does not.
func TestPacingWarning(t *testing.T) {
	row := func(asked, used string) summary.Summary {
		return summary.Summary{Method: "native", Params: result.Params{CongestionControl: asked}, Congestion: used,
			Throughput: summary.Figure{Unit: "Gbit/s", Summary: stats.Summary{N: 3, Mean: 10}}}
	}
	run := func(testbed, cc string) result.Run {
		return result.Run{Testbed: testbed, Host: result.Host{Sysctls: map[string]string{"net.ipv4.tcp_congestion_control": cc}}}
	}
	has := func(ws []string) bool {
		return slices.ContainsFunc(ws, func(w string) bool { return strings.HasPrefix(w, "TCP congestion control bbr") })
	}
	tests := []struct {
		name string
		run  result.Run
		rows []summary.Summary
		want bool
	}{
		{"default run: cubic asked and used, host bbr", run("local", "bbr"), []summary.Summary{row("cubic", "cubic")}, false},
		{"bbr asked and used", run("local", "bbr"), []summary.Summary{row("bbr", "bbr")}, true},
		{"cubic and bbr in one run", run("local", "cubic"), []summary.Summary{row("cubic", "cubic"), row("bbr", "bbr")}, true},
		{"record older than the dimension, host bbr", run("local", "bbr"), []summary.Summary{row("", "")}, true},
		{"record older than the dimension, host cubic", run("local", "cubic"), []summary.Summary{row("", "")}, false},
		{"vm testbed", run("vm", "bbr"), []summary.Summary{row("bbr", "bbr")}, false},
		{"no throughput rows", run("local", "bbr"), nil, false},
	}
	for _, tt := range tests {
		if got := has(summary.Warnings(tt.run, tt.rows)); got != tt.want {
			t.Errorf("%s: pacing warning %v, want %v", tt.name, got, tt.want)
		}
	}
}
