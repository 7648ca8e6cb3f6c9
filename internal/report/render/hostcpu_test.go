package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// TestHostBusyPerSide: between hosts, each side's whole-host busy % with
// its minimum and maximum over every repetition's seconds and the mean of
// the repetitions' averages; on one machine, one entry for it.
func TestHostBusyPerSide(t *testing.T) {
	run, cells := fixture.HostCPURun()
	rows := summary.Aggregate(run, cells)
	ipsec := rows[1]
	if ipsec.Method != "ipsec" || len(ipsec.HostBusy) != 2 || ipsec.HostBusyTest != "tcp_stream" {
		t.Fatalf("ipsec host busy: %+v", ipsec.HostBusy)
	}
	snd, rcv := ipsec.HostBusy[0], ipsec.HostBusy[1]
	if snd.Side != summary.SideSender || snd.Host != "host-a" || rcv.Side != summary.SideRecv || rcv.Host != "host-b" {
		t.Errorf("sides: %+v / %+v", snd, rcv)
	}
	// Sender busy 27.5, 28, 28.5 on average over the repetitions, each
	// with a minimum 3 below and a maximum 4 above.
	if snd.Min == nil || *snd.Min != 24.5 || snd.Max != 32.5 || snd.Avg.N != 3 || snd.Avg.Mean != 28 {
		t.Errorf("sender busy min %v avg %+v max %v, want 24.5, 28 over 3, 32.5", snd.Min, snd.Avg, snd.Max)
	}
	if snd.OneCore == nil || snd.OneCore.CPU != 2 || snd.OneCore.Busy != 99 || snd.OneCore.Repetitions != 3 || snd.OneCore.All != 3 {
		t.Errorf("sender one core: %+v, want cpu2 at 99%% in 3 of 3", snd.OneCore)
	}
	if rcv.OneCore != nil || rows[0].HostBusy[0].OneCore != nil {
		t.Errorf("flagged without a full core: %+v, %+v", rcv.OneCore, rows[0].HostBusy[0].OneCore)
	}
	// UDP: the 64-byte trials carried on one core, the 1024-byte not.
	u := ipsec.Tests.UDP
	if len(u) != 2 || len(u[0].HostBusy) != 2 || u[0].HostBusy[0].OneCore == nil || u[1].HostBusy[0].OneCore != nil {
		t.Errorf("udp host busy: %+v", u)
	}

	// The local testbed: one machine.
	lrun, lcells := fixture.LocalRun()
	native := summary.Aggregate(lrun, lcells)[0]
	if len(native.HostBusy) != 1 || native.HostBusy[0].Side != summary.SideMachine || native.HostBusy[0].Host != "bench1" ||
		native.HostBusy[0].Cores != 8 {
		t.Errorf("local native: %+v", native.HostBusy)
	}
}

// TestOneCore: a core at 95% or more with the others at most 75% on
// average is flagged; all cores full, or one core below 95%, is not.
func TestOneCore(t *testing.T) {
	cores := func(idle ...float64) []result.CoreUsage {
		var out []result.CoreUsage
		for i, v := range idle {
			out = append(out, result.CoreUsage{CPU: i, Idle: v})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		per  []result.CoreUsage
		want int // flagged core, -1 none
	}{
		{"ipsec on one of four", cores(80, 90, 2, 85), 2},
		{"two cores both full", cores(1, 3), -1},
		{"others just with room", cores(5, 25, 25), 0},
		{"others without room", cores(5, 24, 24), -1},
		{"busiest below 95%", cores(6, 90), -1},
		{"one core only", cores(0), -1},
	} {
		o, ok := summary.OneCoreOf(tc.per)
		if got := map[bool]int{true: o.CPU, false: -1}[ok]; got != tc.want {
			t.Errorf("%s: flagged %v (%+v), want core %d", tc.name, ok, o, tc.want)
		}
	}
}

// TestOneCoreFlaggedInTableAndHTML: the row is marked in the table, its
// sides are in the host cpu table and the warning names them; the HTML
// report has the host CPU table with the flag.
func TestOneCoreFlaggedInTableAndHTML(t *testing.T) {
	run, cells := fixture.HostCPURun()
	var tbl bytes.Buffer
	if err := summary.Table(&tbl, run, cells, summary.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	got := tbl.String()
	for _, want := range []string{"ipsec  ^", "ipsec   sender       1.10        —      4        24.5   28.0   32.5  cpu2 99% (rest 4%) 3/3",
		"^ one core: ", "sender cpu2 at 99% with the rest at 4% in 3 of 3 repetitions"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "native ^") || strings.Contains(got, "native  ^") {
		t.Errorf("native marked one-core:\n%s", got)
	}
	b, err := Build([]RunRecords{{Run: run, Cells: cells}}, "files")
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	if err := b.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, want := range []string{`id="` + run.ID + `-host-cpu"`, "<th>busy min %</th>", "cpu2 99% (rest 4%) 3/3", `title="one core`} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
