package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/result"
)

// figuresRun is testsRun (parallel at 256 streams, latency under load, UDP
// sizes, derived figures) with the idle and loaded distributions' CDFs,
// and beside it the rest of seed 000's parallel figures: native and vxlan
// at 1 and 16 streams with 128 streams per process (Fig. 6), and at 1, 2
// and 4 iperf3 processes of one stream each against a 25 Gbit/s line rate
// (Fig. 15). A real run has one streams_per_process (a scenario gives one);
// this fixture holds both layouts so that each figure is checked, and the
// layouts' groups must stay apart.
func figuresRun() (result.Run, []result.Cell) {
	run, cells := fixture.TestsRun()
	cdf := func(p50, p99 float64) []result.Quantile {
		return []result.Quantile{{Fraction: 0, RTT: p50 * 0.6}, {Fraction: 0.5, RTT: p50}, {Fraction: 0.9, RTT: (p50 + p99) / 2},
			{Fraction: 0.99, RTT: p99}, {Fraction: 1, RTT: p99 * 1.4}}
	}
	for i := range cells {
		l := *cells[i].LatencyUnderLoad
		idle, loaded := *l.Idle, *l.Loaded
		idle.CDF, loaded.CDF = cdf(idle.P50, idle.P99), cdf(loaded.P50, loaded.P99)
		l.Idle, l.Loaded = &idle, &loaded
		cells[i].LatencyUnderLoad = &l
		if cells[i].Method == "vxlan" {
			// vxlan's UDP figures differ from native's, so both lines show.
			us := slices.Clone(cells[i].UDPSizes)
			for j := range us {
				r := *us[j].Result
				r.PacketsPerSecond, r.BitsPerSecond = r.PacketsPerSecond*0.7, r.BitsPerSecond*0.7
				r.DelayP50, r.DelayP99, r.Jitter, r.LossPercent = r.DelayP50+5, r.DelayP99+12, r.Jitter*2, r.LossPercent*1.5
				r.SenderCores, r.ReceiverCores = 0.9+0.01*float64(cells[i].Repetition), 0.7
				us[j].Result = &r
			}
			cells[i].UDPSizes = us
		} else {
			us := slices.Clone(cells[i].UDPSizes)
			for j := range us {
				r := *us[j].Result
				r.SenderCores, r.ReceiverCores = 0.6, 0.5+0.01*float64(cells[i].Repetition)
				us[j].Result = &r
			}
			cells[i].UDPSizes = us
		}
	}
	at := cells[len(cells)-1].Finished.Add(time.Second)
	for _, layout := range []struct {
		perProcess int
		streams    []int
	}{{128, []int{1, 16}}, {1, []int{1, 2, 4}}} {
		for _, m := range []struct {
			name    string
			overlay int
			gbps    float64 // at one stream; grows with streams up to 1.6x
		}{{"native", 1500, 14.0}, {"vxlan", 1450, 8.0}} {
			for _, n := range layout.streams {
				for rep := 1; rep <= 2; rep++ {
					p := fixture.Params("ipv4", 1500, m.overlay, true, n)
					p.Tests, p.Direction, p.StreamsPerProcess, p.LineRate = []string{"parallel"}, "forward", layout.perProcess, 25e9
					gain := 1 + 0.6*float64(min(n, 4)-1)/3
					bps := (m.gbps*gain + 0.1*float64(rep)) * 1e9
					procs := (n + layout.perProcess - 1) / layout.perProcess
					c := result.Cell{
						Schema: result.SchemaVersion, RunID: run.ID,
						Key: fmt.Sprintf("%s/ipv4/mtu1500/offloads-on/p%d/spp%d", m.name, n, layout.perProcess), Method: m.name,
						Implementation: "kernel", Params: p, Repetition: rep, Status: result.StatusOK, Started: at, Finished: at.Add(9 * time.Second),
						Parallel: &result.Parallel{Streams: n, StreamsPerProcess: layout.perProcess, BitsPerSecond: bps, SenderBitsPerSecond: bps,
							CPU: &result.CPU{Cores: 8, SenderCores: 0.8 * gain * m.gbps / 14, ReceiverCores: 0.6*gain + 0.01*float64(rep), Split: "approximate"}},
						Derived: &result.Derived{CeilingFraction: 1448.0 / 1538, LineRate: 25e9, LineRateSource: "scenario",
							PercentOfLineRate: 100 * bps / 25e9, PercentOfCeiling: 100 * bps / (25e9 * 1448.0 / 1538)},
					}
					for j := 0; j < procs; j++ {
						c.Parallel.Processes = append(c.Parallel.Processes, result.ProcessThroughput{Port: 5301 + j,
							Streams: min(layout.perProcess, n-j*layout.perProcess), BitsPerSecond: bps / float64(procs)})
					}
					cells = append(cells, c)
					at = at.Add(10 * time.Second)
				}
			}
		}
	}
	for i := range cells {
		cells[i].ID = int64(i + 1)
	}
	return run, cells
}

// TestTestCharts: the data series behind the figures of the parallel,
// line-rate, packet-size and latency-under-load records, against a golden
// file.
func TestTestCharts(t *testing.T) {
	run, cells := figuresRun()
	var mine []Chart
	for _, c := range Charts(run, cells) {
		switch c.Section {
		case SectionParallel, SectionLineRate, SectionUDPSizes, SectionLatencyLoad:
			mine = append(mine, c)
		}
	}
	js, err := json.MarshalIndent(mine, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	fixture.Golden(t, "figures.testcharts.golden", append(js, '\n'))

	count := map[string]int{}
	for _, c := range mine {
		count[c.Section]++
		if _, err := Render(c); err != nil {
			t.Errorf("render %s: %v", c.ID, err)
		}
	}
	// parallel: 128 per process at 1, 16 and 256 streams (throughput and
	// CPU); one per process at 1, 2, 4 (throughput and CPU). Line rate:
	// against processes, and the bars at the chosen count with their CPU.
	// UDP: five figures, and the sender's and receiver's CPU one line per
	// method (the fixture has no mean delay).
	want := map[string]int{SectionParallel: 4, SectionLineRate: 1 + 2, SectionUDPSizes: 5 + 2, SectionLatencyLoad: 1}
	for s, n := range want {
		if count[s] != n {
			t.Errorf("%d %s figures, want %d", count[s], s, n)
		}
	}
	for _, c := range mine {
		if c.Section == SectionLatencyLoad && len(c.Series) != 4 {
			t.Errorf("%s: %d series, want idle and loaded for native and vxlan", c.ID, len(c.Series))
		}
		if c.Section == SectionParallel && strings.Contains(c.ID, "throughput") && strings.HasSuffix(c.ID, "spp128") {
			if got := c.Series[0].X; !slices.Equal(got, []float64{1, 16, 256}) {
				t.Errorf("%s: native at streams %v, want 1, 16, 256", c.ID, got)
			}
		}
	}
}

// TestTestChartsOnlyWithData: without the records, none of these figures;
// the line-rate figure needs a known line rate and one stream per process.
func TestTestChartsOnlyWithData(t *testing.T) {
	run, cells := figuresRun()
	sections := func(cells []result.Cell) map[string]int {
		m := map[string]int{}
		for _, c := range Charts(run, cells) {
			m[c.Section]++
		}
		return m
	}
	var bare, noLine []result.Cell
	for _, c := range cells {
		d := c
		if d.Derived != nil {
			dv := *d.Derived
			dv.LineRate, dv.PercentOfLineRate = 0, 0
			d.Derived = &dv
		}
		noLine = append(noLine, d)
		c.Parallel, c.LatencyUnderLoad, c.UDPSizes, c.Derived = nil, nil, nil, nil
		bare = append(bare, c)
	}
	got := sections(bare)
	for _, s := range []string{SectionParallel, SectionLineRate, SectionUDPSizes, SectionLatencyLoad} {
		if got[s] != 0 {
			t.Errorf("without the test records: %d %s figures", got[s], s)
		}
	}
	if n := sections(noLine)[SectionLineRate]; n != 0 {
		t.Errorf("line rate unknown but %d line-rate figures", n)
	}
	// A fixture without CDFs (testsRun) has no latency-under-load figure.
	r2, c2 := fixture.TestsRun()
	for _, c := range Charts(r2, c2) {
		if c.Section == SectionLatencyLoad {
			t.Errorf("latency-under-load figure %s drawn without CDFs", c.ID)
		}
	}
}

// TestHTMLTestColumns: the summary table has the % of ceiling and CPU-ns
// per packet columns when the run has them, not otherwise, and every test
// figure is in the page.
func TestHTMLTestColumns(t *testing.T) {
	page := func(run result.Run, cells []result.Cell) (string, *Built) {
		b, err := Build([]RunRecords{{Run: run, Cells: cells}}, "files")
		if err != nil {
			t.Fatal(err)
		}
		var buf strings.Builder
		if err := b.WriteHTML(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.String(), b
	}
	html, b := page(figuresRun())
	for _, want := range []string{"<th>% ceiling</th>", "<th>snd ns/pkt</th>", "<th>rcv ns/pkt</th>", "Packet-size sweep", "Latency under load"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, c := range b.Runs[0].Charts {
		if !strings.Contains(html, `<figure id="`+c.ID+`">`) {
			t.Errorf("figure %s missing from the HTML", c.ID)
		}
	}
	html, _ = page(fixture.MatrixRun())
	for _, bad := range []string{"% ceiling", "ns/pkt", "Packet-size sweep"} {
		if strings.Contains(html, bad) {
			t.Errorf("HTML of a run without test records has %q", bad)
		}
	}
}

// TestLatencyLoadTakeAways: the loaded/idle p99 sentence links to the
// figure, says "indistinguishable" when Welch's test cannot tell idle and loaded apart,
// and is never made from a busy row or an unstable ratio.
func TestLatencyLoadTakeAways(t *testing.T) {
	sentences := func(run result.Run, cells []result.Cell) []TakeAway {
		var out []TakeAway
		for _, c := range GenerateTakeAways(run, cells, Charts(run, cells)).Claims {
			if strings.Contains(c.Text, "p99 RTT") {
				out = append(out, c)
			}
		}
		return out
	}
	run, cells := figuresRun()
	got := sentences(run, cells)
	if len(got) != 2 || !strings.HasPrefix(got[0].Text, "Under load, native's p99 RTT is 29.5x its idle p99") ||
		got[0].Figure != run.ID+"-rtt-load-ipv4-mtu1500-offloads-on-p256" {
		t.Errorf("latency-under-load sentences: %+v", got)
	}

	edit := func(f func(*result.Cell)) []result.Cell {
		var out []result.Cell
		for _, c := range cells {
			if c.LatencyUnderLoad != nil {
				l := *c.LatencyUnderLoad
				idle, loaded := *l.Idle, *l.Loaded
				l.Idle, l.Loaded = &idle, &loaded
				c.LatencyUnderLoad = &l
				f(&c)
			}
			out = append(out, c)
		}
		return out
	}
	// Loaded within the idle interval: indistinguishable.
	same := edit(func(c *result.Cell) {
		l := c.LatencyUnderLoad
		l.Loaded.P99 = l.Idle.P99 * (1 + 0.01*float64(c.Repetition))
		l.Idle.P99 *= 1 + 0.015*float64(c.Repetition-1)
		l.P99Ratio = l.Loaded.P99 / l.Idle.P99
	})
	if len(sentences(run, same)) == 0 {
		t.Error("no sentence when idle and loaded p99 overlap")
	}
	for _, c := range sentences(run, same) {
		if !strings.Contains(c.Text, "indistinguishable from idle") {
			t.Errorf("overlapping idle and loaded p99 not called indistinguishable: %q", c.Text)
		}
	}
	// vxlan busy: no sentence. native's ratio unstable: its sentence
	// stands on Welch's test of loaded against idle p99 and marks the
	// ratio with its CV.
	shaky := edit(func(c *result.Cell) {
		if c.Method == "vxlan" {
			c.Meta.Busy = true
		} else {
			c.LatencyUnderLoad.P99Ratio *= float64(c.Repetition * c.Repetition)
		}
	})
	got = sentences(run, shaky)
	if len(got) != 1 || !strings.Contains(got[0].Text, "native's") || !strings.Contains(got[0].Text, "[CV ") {
		t.Errorf("want one sentence, native's with its ratio marked unstable; got %+v", got)
	}
}
