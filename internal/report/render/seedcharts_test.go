package render

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// seedRun is figuresRun (parallel, line rate, UDP sizes) with the mean
// one-way delay of every UDP trial, and beside it seed 004's sweep:
// tcp_stream over IPv6 at MSS 216, 472 and 1220 for native, srv6 and
// vxlan, two repetitions of three measured intervals each.
func seedRun() (result.Run, []result.Cell) {
	run, cells := figuresRun()
	for i := range cells {
		us := slices.Clone(cells[i].UDPSizes)
		for j := range us {
			r := *us[j].Result
			r.DelayMean = r.DelayP50 + 2 + float64(cells[i].Repetition)
			if cells[i].Method == "vxlan" {
				r.DelayMean += 6
			}
			us[j].Result = &r
		}
		cells[i].UDPSizes = us
	}
	at := cells[len(cells)-1].Finished.Add(time.Second)
	for _, mss := range []int{1220, 472, 216} {
		for _, m := range []struct {
			name     string
			overlay  int
			gbps     float64 // at MSS 1220
			snd, rcv float64
		}{{"native", 1500, 6.9, 0.9, 0.8}, {"srv6", 1436, 4.5, 1.0, 1.1}, {"vxlan", 1430, 4.2, 1.1, 1.2}} {
			for n := 1; n <= 2; n++ {
				p := fixture.Params("ipv6", 1500, m.overlay, true, 1)
				p.MSS = mss
				gbps := m.gbps * float64(mss) / 1220 * (1 + 0.02*float64(n))
				c := fixture.CellOf(run.ID, m.name, "kernel", p, n, fixture.Rep{Gbps: gbps, P50: 30, P99: 60, Snd: m.snd, Rcv: m.rcv, BusyPct: 30}, at)
				c.Key = fmt.Sprintf("%s/ipv6/mtu1500/mss%d", m.name, mss)
				bps := gbps * 1e9
				c.Throughput.Intervals = []result.Interval{{Start: 0, End: 1, BitsPerSecond: bps * 0.8, Omitted: true},
					{Start: 1, End: 2, BitsPerSecond: bps * 0.97}, {Start: 2, End: 3, BitsPerSecond: bps * (1 + 0.01*float64(n))},
					{Start: 3, End: 4, BitsPerSecond: bps * 1.02}}
				cells = append(cells, c)
				at = at.Add(20 * time.Second)
			}
		}
	}
	for i := range cells {
		cells[i].ID = int64(i + 1)
	}
	return run, cells
}

// seedKinds are the new figure kinds, by the infix of their ids.
var seedKinds = []string{"throughput-methods", "cpu-sides", "line-rate-bars", "line-rate-cpu-bars", "mtu-lines", "mss-lines",
	"udp-delay-mean", "udp-sender-cpu", "udp-receiver-cpu"}

// seedKind returns the kind of a figure id, or "".
func seedKind(id string) string {
	for _, k := range seedKinds {
		if strings.Contains(id, "-"+k+"-") {
			return k
		}
	}
	return ""
}

// TestSeedFigures: each of the seeds' figures shows what its seed figure
// shows, drawn from the stored records.
func TestSeedFigures(t *testing.T) {
	run, cells := seedRun()
	charts := Charts(run, cells)
	rows := map[string]summary.Summary{}
	for _, r := range summary.Aggregate(run, cells) {
		rows[r.Label+"/"+fmt.Sprint(r.Params.MSS, "/", r.Params.Streams, "/", r.Params.StreamsPerProcess)] = r
	}
	found := map[string]int{}
	ids, titles := map[string]bool{}, map[string]bool{}
	for _, c := range charts {
		if ids[c.ID] || titles[c.Title] {
			t.Errorf("figure %s (%q): id or title taken by another figure", c.ID, c.Title)
		}
		ids[c.ID], titles[c.Title] = true, true
		kind := seedKind(c.ID)
		if kind == "" {
			continue
		}
		found[kind]++
		rendered, err := Render(c)
		if err != nil {
			t.Fatalf("render %s: %v", c.ID, err)
		}
		for _, r := range rendered {
			png, err := r.PNG()
			if len(r.SVG) == 0 || err != nil || len(png) == 0 {
				t.Errorf("%s: svg %d bytes, png %d bytes, %v", c.ID, len(r.SVG), len(png), err)
			}
		}
		switch kind {
		case "throughput-methods":
			var panels []string
			for _, s := range c.Series {
				if !slices.Contains(panels, s.Panel) {
					panels = append(panels, s.Panel)
				}
				if s.Name == "mean" && (!s.Dashed || s.Color != ColorMean) {
					t.Errorf("%s: %s's mean is not dashed in the mean colour", c.ID, s.Panel)
				}
			}
			if !slices.Equal(panels, []string{"native", "srv6", "vxlan"}) {
				t.Errorf("%s: panels %v, want native, srv6, vxlan side by side", c.ID, panels)
			}
			for _, p := range panels {
				n := 0
				for _, s := range c.Series {
					if s.Panel == p {
						n++
					}
				}
				if n != 3 {
					t.Errorf("%s: panel %s has %d lines, want 2 repetitions and the mean", c.ID, p, n)
				}
			}
			// One y axis for all: every panel's range is the same.
			pf := rendered[0].panels
			var ranges []string
			for _, row := range pf.plots {
				for _, p := range row {
					if p != nil {
						ranges = append(ranges, fmt.Sprintf("%g-%g", p.Y.Min, p.Y.Max))
					}
				}
			}
			if len(ranges) != 3 || ranges[0] != ranges[1] || ranges[1] != ranges[2] {
				t.Errorf("%s: panels' y ranges %v, want one shared range", c.ID, ranges)
			}
			for _, p := range panels {
				if !bytes.Contains(rendered[0].SVG, []byte(">"+p+"<")) {
					t.Errorf("%s: no panel title %s in the SVG", c.ID, p)
				}
			}
		case "cpu-sides":
			mss := map[string]int{"mss216": 216, "mss472": 472, "mss1220": 1220}[c.ID[strings.LastIndex(c.ID, "-")+1:]]
			if len(c.Series) != 2 || c.Series[0].Name != "sender" || c.Series[1].Name != "receiver" || c.Series[0].Stack == c.Series[1].Stack {
				t.Fatalf("%s: series %+v, want sender and receiver bars side by side", c.ID, c.Series)
			}
			for i, l := range c.Categories {
				r := rows[fmt.Sprint(l, "/", mss, "/", 1, "/", 0)]
				if c.Series[0].Y[i] != summary.Round6(r.SenderCPU.Mean) || c.Series[1].Y[i] != summary.Round6(r.ReceiverCPU.Mean) {
					t.Errorf("%s: %s at %v/%v, want %v/%v", c.ID, l, c.Series[0].Y[i], c.Series[1].Y[i], r.SenderCPU.Mean, r.ReceiverCPU.Mean)
				}
			}
		case "line-rate-bars", "line-rate-cpu-bars":
			// native's % of line rate peaks at 4 processes (1, 2 and 4 run).
			if !strings.HasSuffix(c.ID, "-n4") || !strings.Contains(c.Title, "at 4 iperf3 processes") {
				t.Errorf("%s (%s): not at 4 processes, where native peaks", c.ID, c.Title)
			}
			if !slices.Equal(c.Categories, []string{"native", "vxlan"}) {
				t.Errorf("%s: categories %v", c.ID, c.Categories)
			}
			if kind == "line-rate-bars" {
				for i, l := range c.Categories {
					if want := rows[l+"/0/4/1"].Tests.PercentOfLineRate.Mean; c.Series[0].Y[i] != summary.Round6(want) {
						t.Errorf("%s: %s at %v%%, want %v", c.ID, l, c.Series[0].Y[i], want)
					}
				}
			}
		case "mss-lines":
			var names []string
			for _, s := range c.Series {
				names = append(names, s.Name)
				if !slices.Equal(s.X, []float64{216, 472, 1220}) {
					t.Errorf("%s: %s at MSS %v, want 216, 472, 1220", c.ID, s.Name, s.X)
				}
				if s.Y[0] >= s.Y[2] {
					t.Errorf("%s: %s does not grow with the MSS: %v", c.ID, s.Name, s.Y)
				}
			}
			if !slices.Equal(names, []string{"native", "srv6", "vxlan"}) {
				t.Errorf("%s: lines %v, want every method", c.ID, names)
			}
		case "udp-delay-mean":
			// native's mean delay at 64 bytes: p50 9 + 2 + repetition.
			if s := c.Series[0]; s.Name != "native" || s.X[0] != 64 || s.Y[0] != 12.5 {
				t.Errorf("%s: first line %s at %v: %v, want native at 64 bytes: 12.5 µs", c.ID, s.Name, s.X, s.Y)
			}
		}
	}
	want := map[string]int{"throughput-methods": 3, "cpu-sides": 3, "line-rate-bars": 1, "line-rate-cpu-bars": 1,
		"mss-lines": 1, "udp-delay-mean": 1, "udp-sender-cpu": 1, "udp-receiver-cpu": 1}
	for k, n := range want {
		if found[k] != n {
			t.Errorf("%d %s figures, want %d", found[k], k, n)
		}
	}
}

var (
	figureRE   = regexp.MustCompile(`(?s)<figure id="([^"]+)">.*?</figure>`)
	svgRE      = regexp.MustCompile(`(?s)<svg.*?</svg>`)
	svgWordsRE = regexp.MustCompile(`<text[^>]*>([^<]*)</text>`)
	numberRE   = regexp.MustCompile(`^[-+0-9.,e ]*$`)
)

// svgDigest stands for an inline SVG in the golden files: the distinct
// words it writes (title, axis titles, panel titles, legend, categories),
// sorted; tick numbers are left out, as they depend on the axes' layout.
func svgDigest(svg string) string {
	seen := map[string]bool{}
	for _, m := range svgWordsRE.FindAllStringSubmatch(svg, -1) {
		if s := strings.TrimSpace(m[1]); !numberRE.MatchString(s) {
			seen[s] = true
		}
	}
	var words []string
	for w := range seen {
		words = append(words, w)
	}
	sort.Strings(words)
	return "[svg: " + strings.Join(words, " | ") + "]"
}

// TestSeedFiguresHTML: every new figure kind as the HTML report shows it
// (figure, inline SVG, caption, file links), from fixture records, against
// one golden file per kind; the SVG stands as the words it draws.
func TestSeedFiguresHTML(t *testing.T) {
	seed, seedCells := seedRun()
	matrix, matrixCells := fixture.MatrixRun()
	got := map[string]*strings.Builder{}
	for _, rr := range []RunRecords{{Run: seed, Cells: seedCells}, {Run: matrix, Cells: matrixCells}} {
		built, err := Build([]RunRecords{rr}, "report-files")
		if err != nil {
			t.Fatal(err)
		}
		var html bytes.Buffer
		if err := built.WriteHTML(&html); err != nil {
			t.Fatal(err)
		}
		for _, m := range figureRE.FindAllStringSubmatch(html.String(), -1) {
			kind := seedKind(m[1])
			if kind == "" {
				continue
			}
			if got[kind] == nil {
				got[kind] = &strings.Builder{}
			}
			got[kind].WriteString(svgRE.ReplaceAllStringFunc(m[0], svgDigest) + "\n")
		}
	}
	for _, k := range seedKinds {
		if got[k] == nil {
			t.Errorf("no %s figure in the fixtures' reports", k)
			continue
		}
		fixture.Golden(t, "seedfig-"+k+".html.golden", []byte(got[k].String()))
	}
}
