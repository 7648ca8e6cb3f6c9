package summary

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/result"
)

// TestTunnelsPercentNative: a row with N tunnels compares with native at
// one tunnel under the same other parameters, and a native row measured
// at N tunnels (were there one) is never a baseline; the rows head groups
// of their own ("-- 100 tunnels") and say what % native means.
func TestTunnelsPercentNative(t *testing.T) {
	run, cells := fixture.ScaleRun()
	rows := Aggregate(run, cells)
	var native float64
	for _, r := range rows {
		if r.Method == NativeMethod {
			native = r.Throughput.Mean
		}
	}
	for _, r := range rows {
		want := Round6(100 * r.Throughput.Mean / native)
		if r.PercentNative == nil || *r.PercentNative != want {
			t.Errorf("%s: %% native %v, want %v (against native at one tunnel)", r.Key, r.PercentNative, want)
		}
	}
	// A native row at 10 tunnels, twice as fast: the 10-tunnel rows still
	// compare with native at one.
	odd := cells[0]
	odd.Params.Tunnels, odd.Key = 10, odd.Key+"/tunnels10"
	odd.Throughput = &result.Throughput{BitsPerSecond: 2 * native * 1e9}
	for _, r := range Aggregate(run, append([]result.Cell{odd}, cells...)) {
		if r.Method == "vxlan" && r.Params.Tunnels == 10 && (r.PercentNative == nil || *r.PercentNative > 50) {
			t.Errorf("vxlan at 10 tunnels: %% native %v, want against native at one tunnel (about 47)", *r.PercentNative)
		}
	}
	var b strings.Builder
	if err := Table(&b, run, cells, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-- 1 tunnel\n", "-- 100 tunnels\n", "wireguard-go (100 tunnels)  100  peer",
		"kernel shared: both sides ran on one kernel", "% native with N tunnels: against native at one tunnel"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestScaleSummary: the scale and reconf figures over the ok repetitions;
// a failed reconf counts in none; a row without either has no Scale.
func TestScaleSummary(t *testing.T) {
	run, cells := fixture.ScaleRun()
	var wg []result.Cell
	for _, c := range cells {
		if c.Method == "wireguard-go" && c.Params.Tunnels == 100 {
			wg = append(wg, c)
		}
	}
	wg[2].Reconf = &result.Reconf{Error: "wg set: exit status 1"}
	s := summarize(run, wg[0].Key, wg).Scale
	if s == nil || s.Unit != "peer" || !s.SharedKernel || s.Setup.N != 3 || s.AddP99.N != 3 {
		t.Fatalf("scale summary %+v", s)
	}
	if s.ReconfBlocked.N != 2 || s.ReconfBlocked.Mean != 0.015 || s.ReconfLost.Mean != 15 {
		t.Errorf("reconf over the two repetitions without error: blocked %+v, lost %+v", s.ReconfBlocked, s.ReconfLost)
	}
	if want := float64(wg[0].Scale.PerTunnel+wg[1].Scale.PerTunnel+wg[2].Scale.PerTunnel) / 3; s.PerTunnel.Mean != want {
		t.Errorf("memory per tunnel %g, want %g", s.PerTunnel.Mean, want)
	}
	if summarize(run, cells[0].Key, cells[:3]).Scale != nil {
		t.Error("native at one tunnel has a scale summary")
	}
}

// TestTunnelsSiteMatrices: on the ssh testbed, a method's pairs at 1 and
// at 100 tunnels are two matrices, the second named by its count.
func TestTunnelsSiteMatrices(t *testing.T) {
	run := result.Run{ID: "ssh0041", Testbed: "ssh"}
	var cells []result.Cell
	for _, n := range []int{0, 100} {
		for _, ab := range [][2]string{{"fra", "nyc"}, {"nyc", "fra"}} {
			p := result.Params{Family: "ipv4", UnderlayMTU: 1500, Streams: 1, Tunnels: n, SiteA: ab[0], SiteB: ab[1]}
			cells = append(cells, result.Cell{Method: "vxlan", Key: "vxlan/" + ab[0] + ">" + ab[1] + "/" + Tunnels(n), Params: p,
				Repetition: 1, Status: result.StatusOK, Throughput: &result.Throughput{BitsPerSecond: 1e9}})
		}
	}
	ms := SiteMatrices(Aggregate(run, cells))
	if len(ms) != 2 || ms[0].Params != "ipv4, MTU 1500, 1 stream" || ms[1].Params != "ipv4, MTU 1500, 1 stream, 100 tunnels" {
		t.Errorf("site matrices %+v, want one per tunnel count", ms)
	}
}
