package render

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// TestFixtureCharts: the data series behind every figure of each fixture
// run, and the take-away sentences, against golden files.
func TestFixtureCharts(t *testing.T) {
	runs := fixtureDB(t)
	for i, rr := range runs {
		t.Run(fixture.FixtureNames[i], func(t *testing.T) {
			charts := Charts(rr.Run, rr.Cells)
			js, err := json.MarshalIndent(charts, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			fixture.Golden(t, "fixture-"+fixture.FixtureNames[i]+".charts.golden", append(js, '\n'))

			var b strings.Builder
			WriteTakeAways(&b, GenerateTakeAways(rr.Run, rr.Cells, charts))
			fixture.Golden(t, "fixture-"+fixture.FixtureNames[i]+".takeaways.golden", []byte(b.String()))
		})
	}
}

// TestGoFixtureTakeAways: the sentences for the Go-built fixtures, whose
// figures are clean enough for every kind of claim, against golden files.
func TestGoFixtureTakeAways(t *testing.T) {
	for _, f := range fixture.Fixtures {
		t.Run(f.Name, func(t *testing.T) {
			run, cells := f.Make()
			var b strings.Builder
			WriteTakeAways(&b, GenerateTakeAways(run, cells, Charts(run, cells)))
			fixture.Golden(t, f.Name+".takeaways.golden", []byte(b.String()))
		})
	}
}

// TestChartsPresentOnlyWithData: each figure appears only when the run has
// its data.
func TestChartsPresentOnlyWithData(t *testing.T) {
	runs := fixtureDB(t)
	sections := func(rr RunRecords) map[string]int {
		m := map[string]int{}
		for _, c := range Charts(rr.Run, rr.Cells) {
			m[c.Section]++
		}
		return m
	}
	matrix, streamsRun := sections(runs[0]), sections(runs[1])
	// matrix: 12 rows in 4 parameter sets, MTU and offloads vary, streams
	// do not. Per set, the methods side by side over time and the sender
	// and receiver CPU bars; per offload state, throughput against MTU.
	want := map[string]int{SectionThroughputTime: 12 + 4, SectionRTT: 4, SectionCPU: 4 + 4, SectionMTU: 2 + 2, SectionOffloads: 2}
	for s, n := range want {
		if matrix[s] != n {
			t.Errorf("matrix run: %d %s figures, want %d", matrix[s], s, n)
		}
	}
	if matrix[SectionStreams] != 0 {
		t.Errorf("matrix run has one stream count but %d streams figures", matrix[SectionStreams])
	}
	// streams: 1 and 4 streams; MTU and offloads fixed.
	if streamsRun[SectionStreams] != 2 {
		t.Errorf("streams run: %d streams figures, want 2 (throughput and CPU)", streamsRun[SectionStreams])
	}
	if streamsRun[SectionMTU] != 0 || streamsRun[SectionOffloads] != 0 {
		t.Errorf("streams run has one MTU and one offload state but MTU/offloads figures: %v", streamsRun)
	}

	// A run without latency records has no RTT figure; without CPU, no CPU figure.
	var bare []result.Cell
	for _, c := range runs[0].Cells {
		c.Latency, c.CPU = nil, nil
		bare = append(bare, c)
	}
	got := sections(RunRecords{Run: runs[0].Run, Cells: bare})
	if got[SectionRTT] != 0 || got[SectionCPU] != 0 || got[SectionThroughputTime] != 12+4 {
		t.Errorf("without latency and CPU records: %v", got)
	}
}

// TestThroughputTimeSeries: one series per repetition plus the dashed mean,
// which is the mean of the repetitions at each interval.
func TestThroughputTimeSeries(t *testing.T) {
	rr := fixtureDB(t)[0]
	c := Charts(rr.Run, rr.Cells)[0]
	if c.Section != SectionThroughputTime || len(c.Series) != 4 {
		t.Fatalf("first chart %s has %d series, want 3 repetitions and a mean", c.ID, len(c.Series))
	}
	mean := c.Series[3]
	if !mean.Dashed || mean.Color != ColorMean {
		t.Errorf("mean series not dashed in the mean colour: %+v", mean)
	}
	for i := range mean.Y {
		want := (c.Series[0].Y[i] + c.Series[1].Y[i] + c.Series[2].Y[i]) / 3
		if d := mean.Y[i] - want; d > 1e-4 || d < -1e-4 {
			t.Errorf("mean at interval %d = %g, want %g", i, mean.Y[i], want)
		}
	}
}

// TestTakeAwaysRestOnTrustworthyFigures: no sentence rests on a busy,
// emulated or single-repetition row, and every throughput claim's figures
// are stable.
func TestTakeAwaysRestOnTrustworthyFigures(t *testing.T) {
	all := fixtureDB(t)
	all = append(all, RunRecords{})
	all[len(all)-1].Run, all[len(all)-1].Cells = fixture.LocalRun()
	for _, rr := range all {
		rows := map[string]summary.Summary{}
		for _, r := range summary.Aggregate(rr.Run, rr.Cells) {
			rows[r.Key] = r
		}
		ta := GenerateTakeAways(rr.Run, rr.Cells, Charts(rr.Run, rr.Cells))
		for _, c := range ta.Claims {
			for _, k := range c.Basis {
				r := rows[k]
				if ok, why := usable(r); !ok {
					t.Errorf("run %s: %q rests on %s, which %s", rr.Run.ID, c.Text, k, why)
				}
				if strings.Contains(c.Text, "throughput") && !stable(r.Throughput) {
					t.Errorf("run %s: %q rests on the unstable throughput of %s", rr.Run.ID, c.Text, k)
				}
			}
		}
	}
	// localRun: vxlan is unstable and busy, srv6 lost a repetition but
	// keeps two; only srv6 against native can be said.
	run, cells := fixture.LocalRun()
	ta := GenerateTakeAways(run, cells, Charts(run, cells))
	for _, c := range ta.Claims {
		if strings.Contains(c.Text, "vxlan") {
			t.Errorf("claim about busy, unstable vxlan: %q", c.Text)
		}
	}
	if !slices.ContainsFunc(ta.Withheld, func(s string) bool { return strings.Contains(s, "vxlan") && strings.Contains(s, "busy") }) {
		t.Errorf("vxlan not listed as withheld for its busy background: %q", ta.Withheld)
	}
}

// TestTakeAwaySentences: the sentences for a clean, made-up run, including
// an overlap that must be called indistinguishable.
func TestTakeAwaySentences(t *testing.T) {
	run, cells := fixture.MatrixRun() // two repetitions of each cell, CV about 0.7%
	ta := GenerateTakeAways(run, cells, Charts(run, cells))
	var b strings.Builder
	WriteTakeAways(&b, ta)
	got := b.String()
	for _, want := range []string{
		"vxlan reaches ", "of native's throughput at MTU 1500 with offloads on",
		"Turning offloads off leaves native ",
		"MTU 9000 gives native ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("take-aways lack %q:\n%s", want, got)
		}
	}

	// Two methods Welch's test cannot tell apart are indistinguishable.
	var same []result.Cell
	for _, c := range cells {
		if c.Params.UnderlayMTU == 1500 && c.Params.Offloads {
			c := c
			if c.Method == "vxlan" {
				t := *c.Throughput
				t.BitsPerSecond = map[int]float64{1: 23.0e9, 2: 24.0e9, 3: 23.5e9}[c.Repetition]
				c.Throughput = &t
			} else {
				t := *c.Throughput
				t.BitsPerSecond = map[int]float64{1: 23.2e9, 2: 23.9e9, 3: 23.6e9}[c.Repetition]
				c.Throughput = &t
			}
			same = append(same, c)
		}
	}
	ta = GenerateTakeAways(run, same, Charts(run, same))
	if len(ta.Claims) == 0 || !strings.Contains(ta.Claims[0].Text, "vxlan and native are indistinguishable in throughput") {
		t.Errorf("overlapping intervals not called indistinguishable: %+v", ta.Claims)
	}
}

// TestRenderAll: every chart draws as an SVG and a PNG with a size.
func TestRenderAll(t *testing.T) {
	runs := fixtureDB(t)
	dir := t.TempDir()
	b, err := Build(runs, "report-files")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range b.Runs {
		for _, f := range r.Figures {
			n++
			svg, err := os.ReadFile(filepath.Join(dir, f.FileStem()+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("</svg>")) {
				t.Errorf("%s.svg is not an SVG document", f.FileStem())
			}
			pf, err := os.Open(filepath.Join(dir, f.FileStem()+".png"))
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(pf)
			pf.Close()
			if err != nil {
				t.Fatalf("%s.png: %v", f.FileStem(), err)
			}
			if img.Bounds().Dx() < 300 || img.Bounds().Dy() < 200 {
				t.Errorf("%s.png is only %v", f.FileStem(), img.Bounds())
			}
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2*n {
		t.Errorf("%d files for %d figures", len(ents), n)
	}
}

// TestHTMLSelfContained: the HTML refers to nothing outside itself but the
// figure files it links for download; every figure is inline.
func TestHTMLSelfContained(t *testing.T) {
	runs := fixtureDB(t)
	b, err := Build(runs, "report-files")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := b.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)(src|href)\s*=\s*"?\s*(https?:)?//`),
		regexp.MustCompile(`(?i)@import|@font-face|url\(`),
		regexp.MustCompile(`(?i)<script[^>]+src=`),
		regexp.MustCompile(`(?i)<link[^>]+href=`),
	} {
		if m := bad.FindString(html); m != "" {
			t.Errorf("HTML refers outside itself: %q", m)
		}
	}
	for _, r := range b.Runs {
		for _, c := range r.Charts {
			if !strings.Contains(html, `<figure id="`+c.ID+`">`) {
				t.Errorf("figure %s missing from the HTML", c.ID)
			}
		}
		for _, ta := range r.TakeAways.Claims {
			if !strings.Contains(html, `href="#`+ta.Figure+`"`) || !strings.Contains(html, `id="`+ta.Figure+`"`) {
				t.Errorf("take-away %q does not link to an existing figure %s", ta.Text, ta.Figure)
			}
		}
	}
	for _, want := range []string{"Comparison", "Environment", "table class=\"sortable\""} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// TestEnvironmentDifferences: attributes on which compared runs differ are
// marked, the start time is not.
func TestEnvironmentDifferences(t *testing.T) {
	a, _ := fixture.LocalRun()
	b, _ := fixture.MatrixRun()
	b.Host.Kernel = "6.12.48+deb13-amd64"
	b.Host.Tools = map[string]string{"iperf3": "3.18"}
	a.Labels = map[string]string{"ticket": "NET-42", "cni": "1.4"}
	b.Labels = map[string]string{"ticket": "NET-42", "cni": "1.5"}
	e := environment([]result.Run{a, b})
	got := map[string]bool{}
	for _, r := range e.Rows {
		got[r.Name] = r.Differs
	}
	for name, want := range map[string]bool{"kernel": true, "tool iperf3": true, "tool sockperf": true, "started": false, "CPU": false,
		"label cni": true, "label ticket": false} {
		if got[name] != want {
			t.Errorf("%s differs = %t, want %t", name, got[name], want)
		}
	}
}

// TestDeviceDifferences: a device whose MTU or offloads changed between the
// first run and a later one is marked.
func TestDeviceDifferences(t *testing.T) {
	runA, cellsA := fixture.MatrixRun()
	runB, cellsB := fixture.MatrixRun()
	runB.ID = "later"
	for i := range cellsB {
		c := &cellsB[i]
		c.RunID = runB.ID
		c.Meta.Devices = slices.Clone(c.Meta.Devices)
		if c.Method == "vxlan" && c.Params.UnderlayMTU == 1500 && c.Params.Offloads {
			c.Meta.Devices[0].MTU = 1400
		}
	}
	b, err := Build([]RunRecords{{runA, cellsA}, {runB, cellsB}}, "files")
	if err != nil {
		t.Fatal(err)
	}
	var marked []string
	for _, d := range b.Runs[1].Devices {
		if d.Differs {
			marked = append(marked, d.Cell)
		}
	}
	if len(marked) != 1 || !strings.HasPrefix(marked[0], "vxlan (") {
		t.Errorf("devices marked as changed: %q, want vxlan's one", marked)
	}
	for _, d := range b.Runs[0].Devices {
		if d.Differs {
			t.Errorf("first run's device %s marked", d.Name)
		}
	}
}

func TestPlainNumber(t *testing.T) {
	for v, want := range map[float64]string{1.2000000000000002: "1.2", 25: "25", 0.1 + 0.2: "0.3", 1e6: "1000000", 0.0005: "0.0005"} {
		if got := plainNumber(v); got != want {
			t.Errorf("plainNumber(%v) = %q, want %q", v, got, want)
		}
	}
}
