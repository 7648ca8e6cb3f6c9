package render

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// TestTestTakeAways: the sentences of the parallel, line-rate and
// udp_sizes records (figuresRun), against a golden file, and what a
// reader checks in them: each links to its figure.
func TestTestTakeAways(t *testing.T) {
	run, cells := figuresRun()
	charts := Charts(run, cells)
	ta := GenerateTakeAways(run, cells, charts)
	var b strings.Builder
	WriteTakeAways(&b, ta)
	fixture.Golden(t, "figures.takeaways.golden", []byte(b.String()))

	ids := map[string]bool{}
	for _, c := range charts {
		ids[c.ID] = true
	}
	find := func(prefix string) []TakeAway {
		var out []TakeAway
		for _, c := range ta.Claims {
			if strings.HasPrefix(c.Text, prefix) {
				out = append(out, c)
			}
		}
		return out
	}
	// figuresRun's parallel rows grow 1.6x from 1 to 4 streams and no more.
	par := find("In the parallel test (ipv4, MTU 1500, offloads on, 128 streams per process), vxlan peaks at ")
	if len(par) != 1 || !strings.Contains(par[0].Text, "of native's peak") || !ids[par[0].Figure] {
		t.Errorf("vxlan parallel sentence: %+v", par)
	}
	line := find("vxlan needs ")
	lineNot := find("vxlan does not reach 90% of the line rate")
	if len(line)+len(lineNot) != 1 {
		t.Errorf("vxlan line-rate sentences: %+v %+v", line, lineNot)
	}
	for _, c := range append(line, lineNot...) {
		if !ids[c.Figure] || !strings.Contains(c.Figure, "-line-rate-") {
			t.Errorf("line-rate sentence links to %q", c.Figure)
		}
	}
	udp := find("At 64-byte frames with 256 streams, vxlan forwards ")
	if len(udp) != 1 || !strings.Contains(udp[0].Text, "70% of native's") || !ids[udp[0].Figure] {
		t.Errorf("vxlan packet-rate sentence: %+v", udp)
	}
	if len(find("vxlan loses most against native at ")) != 1 {
		t.Errorf("no worst-frame sentence for vxlan:\n%s", b.String())
	}
}

// TestLineRateTakeAway: the process count that first reaches 90% of the
// line rate; none when a row on the way is unstable or busy.
func TestLineRateTakeAway(t *testing.T) {
	run, cells := figuresRun()
	// native at 1, 2, 4 processes of one stream: 14.1, 16.9, 22.5 Gbit/s
	// and up: 56%, 68%, 90% of 25 Gbit/s.
	sentence := func(cells []result.Cell) string {
		for _, c := range GenerateTakeAways(run, cells, Charts(run, cells)).Claims {
			if strings.HasPrefix(c.Text, "native needs ") || strings.HasPrefix(c.Text, "native does not reach") {
				return c.Text
			}
		}
		return ""
	}
	got := sentence(cells)
	if !strings.HasPrefix(got, "native needs 4 iperf3 processes of one stream each to reach 90% of the line rate") {
		t.Errorf("native line rate: %q", got)
	}
	var busy []result.Cell
	for _, c := range cells {
		if c.Method == "native" && c.Params.StreamsPerProcess == 1 && c.Params.Streams == 2 && c.Repetition == 1 {
			c.Meta.Busy = true
		}
		busy = append(busy, c)
	}
	if got := sentence(busy); got != "" {
		t.Errorf("sentence from a busy row: %q", got)
	}
}

// TestMSSTakeAway: rows differing only in MSS give one sentence per
// method, naming both MSS values.
func TestMSSTakeAway(t *testing.T) {
	run, cells := fixture.LocalRun()
	var sweep []result.Cell
	for _, c := range cells {
		if c.Method != "native" {
			continue
		}
		for _, mss := range []int{1220, 216} {
			d := c
			d.Params.MSS = mss
			d.Key += "/mss" + map[int]string{1220: "1220", 216: "216"}[mss]
			if mss == 216 {
				t := *c.Throughput
				t.BitsPerSecond /= 4
				d.Throughput = &t
			}
			sweep = append(sweep, d)
		}
	}
	var got []string
	for _, c := range GenerateTakeAways(run, sweep, Charts(run, sweep)).Claims {
		if strings.Contains(c.Text, "MSS") {
			got = append(got, c.Text)
		}
	}
	want := "With MSS 216, native carries 25% of its throughput with MSS 1220 (5.91 ± 0.16 against 23.7 ± 0.64 Gbit/s; Welch's t-test over 3 repetitions each: p < 0.001)."
	if len(got) == 0 || got[len(got)-1] != want {
		t.Errorf("MSS sentences %q, want the last to be %q", got, want)
	}
}

// TestJumboGainBesideNative: a method's jumbo-frame gain is given with
// native's beside it.
func TestJumboGainBesideNative(t *testing.T) {
	run, cells := fixture.MatrixRun()
	var got []string
	for _, c := range GenerateTakeAways(run, cells, Charts(run, cells)).Claims {
		if strings.HasPrefix(c.Text, "MTU 9000 gives vxlan ") {
			got = append(got, c.Text)
			if !strings.HasSuffix(c.Text, "; native gains 1.6x.") || !strings.Contains(c.Figure, "-mtu-") {
				t.Errorf("jumbo sentence %q [%s]: want native's gain and the MTU figure", c.Text, c.Figure)
			}
		}
	}
	if len(got) != 2 {
		t.Errorf("jumbo sentences for vxlan: %q, want one per offload state", got)
	}
}

// TestParallelTakeAwayWithoutNative: a parallel group without native still
// gives each method's peak, with no share of native.
func TestParallelTakeAwayWithoutNative(t *testing.T) {
	run, cells := figuresRun()
	var rest []result.Cell
	for _, c := range cells {
		if c.Method != summary.NativeMethod {
			rest = append(rest, c)
		}
	}
	n := 0
	for _, c := range GenerateTakeAways(run, rest, Charts(run, rest)).Claims {
		if strings.HasPrefix(c.Text, "In the parallel test (") {
			n++
			if strings.Contains(c.Text, "native") {
				t.Errorf("share of native without native: %q", c.Text)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d parallel peak sentences, want one per layout", n)
	}
}

// TestMSSTakeAwayLinksItsFigure: the MSS comparison of a run sweeping
// MSS links to the throughput-against-MSS figure, not to the summary.
func TestMSSTakeAwayLinksItsFigure(t *testing.T) {
	run, cells := fixture.LocalRun()
	var sweep []result.Cell
	for _, c := range cells {
		for _, mss := range []int{1220, 216} {
			d := c
			d.Params.MSS = mss
			d.Key += "/mss" + strconv.Itoa(mss)
			sweep = append(sweep, d)
		}
	}
	charts := Charts(run, sweep)
	ids := map[string]bool{}
	for _, c := range charts {
		ids[c.ID] = true
	}
	n := 0
	for _, c := range GenerateTakeAways(run, sweep, charts).Claims {
		if !strings.HasPrefix(c.Text, "With MSS") && !strings.Contains(c.Text, "indistinguishable with MSS") {
			continue
		}
		n++
		if !ids[c.Figure] || !strings.Contains(c.Figure, "-mss-lines-") {
			t.Errorf("%q links to %q, not to a throughput-against-MSS figure", c.Text, c.Figure)
		}
	}
	if n == 0 {
		t.Fatal("no MSS comparison among the take-aways")
	}
}

// TestTakeAwaysNameWhatVaries: in a run that measures every row in two
// directions, or between two ssh site pairs, each sentence that rests on
// one of them says which.
func TestTakeAwaysNameWhatVaries(t *testing.T) {
	run, cells := fixture.LocalRun()
	for _, tc := range []struct {
		name  string
		vary  func(c *result.Cell, second bool)
		words [2]string
	}{
		{"direction", func(c *result.Cell, second bool) {
			if second {
				c.Params.Direction = "reverse"
			}
		}, [2]string{"in direction forward", "in direction reverse"}},
		{"sites", func(c *result.Cell, second bool) {
			c.Params.SiteA, c.Params.SiteB = "lon", "mum"
			if second {
				c.Params.SiteA, c.Params.SiteB = "lon", "fra"
			}
		}, [2]string{"from lon to mum", "from lon to fra"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var both []result.Cell
			for i, second := range []bool{false, true} {
				for _, c := range cells {
					c.Key += "/" + strconv.Itoa(i)
					tc.vary(&c, second)
					both = append(both, c)
				}
			}
			claims := GenerateTakeAways(run, both, Charts(run, both)).Claims
			seen := [2]bool{}
			for _, c := range claims {
				n := 0
				for i, w := range tc.words {
					if strings.Contains(c.Text, w) {
						seen[i] = true
						n++
					}
				}
				if n == 0 {
					t.Errorf("%q does not say which %s it rests on", c.Text, tc.name)
				}
			}
			if !seen[0] || !seen[1] {
				t.Errorf("sentences name %v of %q: %d claims", seen, tc.words, len(claims))
			}
		})
	}
}
