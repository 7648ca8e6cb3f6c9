package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/result"
)

// connectRun: native, vxlan and ipsec with the connect and recover tests,
// three repetitions each; ipsec also rekeyed, and vxlan's third
// repetition never recovered.
func connectRun() (result.Run, []result.Cell) {
	run, cells := fixture.TestsRun()
	run.ID = "20261126T210000-3333"
	var out []result.Cell
	for i, m := range []string{"native", "vxlan", "ipsec"} {
		for rep := 1; rep <= 3; rep++ {
			p := cells[0].Params
			p.Tests, p.RecoverDown = []string{"connect", "recover"}, 2
			f := float64(rep)
			c := result.Cell{Schema: result.SchemaVersion, RunID: run.ID, Key: m + "/ipv4/mtu1500/offloads-on/p256", Method: m,
				Implementation: "kernel", Params: p, Repetition: rep, Status: result.StatusOK, Started: cells[0].Started,
				Finished: cells[0].Finished,
				Connect: &result.Connect{Setup: 0.001*float64(i*300) + 0.002*f, Handshake: 0.03 + 0.01*float64(i) + 0.001*f,
					Interval: 0.01, Probes: 1, Tool: "tunbench-rr probe (UDP)"},
				Recover: &result.Recover{Dev: "tb3333-a", Down: 2, Interval: 0.01, Sent: 350, Lost: int64(200 + 10*i + rep),
					Recovered: true, Recovery: 0.01 + 0.02*float64(i) + 0.001*f, Outage: 2.02, Tool: "tunbench-rr stream (UDP)"},
			}
			c.Connect.Total = c.Connect.Setup + c.Connect.Handshake
			if m == "ipsec" {
				c.Recover.Rekey = &result.Rekey{How: "swanctl --rekey --child tunbench", Took: 0.1, Sent: 330, Lost: int64(rep - 1), Outage: 0.01 + 0.005*f}
			}
			if m == "vxlan" && rep == 3 {
				c.Recover.Recovered, c.Recover.Recovery = false, 0
			}
			out = append(out, c)
		}
	}
	for i := range out {
		out[i].ID = int64(i + 1)
	}
	return run, out
}

// TestConnectCharts: the connect, recovery and lost-request bars per
// method with their intervals, against a golden file; each renders, and
// the captions are distinct.
func TestConnectCharts(t *testing.T) {
	run, cells := connectRun()
	var mine []Chart
	for _, c := range Charts(run, cells) {
		if c.Section == SectionConnect {
			mine = append(mine, c)
		}
	}
	js, err := json.MarshalIndent(mine, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	fixture.Golden(t, "connect.charts.golden", append(js, '\n'))
	if len(mine) != 5 {
		t.Fatalf("%d connect/recover figures, want connect, recovery, lost, rekey outage and rekey lost", len(mine))
	}
	captions := map[string]bool{}
	for _, c := range mine {
		if _, err := Render(c); err != nil {
			t.Errorf("render %s: %v", c.ID, err)
		}
		if captions[c.Caption] {
			t.Errorf("caption of %s repeated", c.ID)
		}
		captions[c.Caption] = true
		want := "native,vxlan,ipsec"
		if strings.Contains(c.ID, "-rekey") {
			want = "ipsec" // the only method that rekeyed: no zero bars for the others
		}
		if got := strings.Join(c.Categories, ","); got != want {
			t.Errorf("%s: categories %s, want %s", c.ID, got, want)
		}
		for _, s := range c.Series {
			if len(s.YErr) != len(c.Categories) || s.YErr[0] <= 0 {
				t.Errorf("%s %s: error bars %v, want a 95%% interval per method", c.ID, s.Name, s.YErr)
			}
		}
	}
	// Without the records, no such figure.
	for i := range cells {
		cells[i].Connect, cells[i].Recover = nil, nil
	}
	for _, c := range Charts(run, cells) {
		if c.Section == SectionConnect {
			t.Errorf("figure %s without connect or recover records", c.ID)
		}
	}
}

// TestConnectTakeAways: the fastest to connect and to recover, each
// against the next, by Welch's t-test.
func TestConnectTakeAways(t *testing.T) {
	run, cells := connectRun()
	ta := GenerateTakeAways(run, cells, Charts(run, cells))
	var got []string
	for _, c := range ta.Claims {
		got = append(got, c.Text)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"native connects fastest", "native carries traffic again soonest after the underlay comes back"} {
		if !strings.Contains(all, want) {
			t.Errorf("take-aways lack %q:\n%s", want, all)
		}
	}
}
