package runner

import (
	"testing"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/sample"
)

// Two hosts' records become one with each host's whole-host busy %
// (minimum, average, maximum) and per-core figures under its side; with
// b sending, b's host is the sender.
func TestMergeHostsKeepsEachHostsBusy(t *testing.T) {
	a := &result.CPU{Cores: 4, BusyMin: 10, BusyAvg: 20, BusyMax: 30, PerCore: []result.CoreUsage{{CPU: 0, Idle: 1}}}
	b := &result.CPU{Cores: 2, BusyMin: 40, BusyAvg: 50, BusyMax: 60, PerCore: []result.CoreUsage{{CPU: 1, Idle: 50}}}
	for _, aSender := range []bool{true, false} {
		m := mergeHosts(a, b, "ha", "hb", aSender)
		if m.Split != sample.SplitHosts || len(m.Hosts) != 2 {
			t.Fatalf("merged %+v", m)
		}
		send, recv := m.Hosts[0], m.Hosts[1]
		wantSend, wantRecv := "ha", "hb"
		if !aSender {
			wantSend, wantRecv = "hb", "ha"
		}
		if send.Host != wantSend || send.Side != sample.SideSender || recv.Host != wantRecv || recv.Side != sample.SideReceiver {
			t.Errorf("aSender %v: hosts %s/%s %s/%s", aSender, send.Host, send.Side, recv.Host, recv.Side)
		}
		for _, h := range m.Hosts {
			src := a
			if h.Host == "hb" {
				src = b
			}
			if h.BusyMin == nil || *h.BusyMin != src.BusyMin || h.BusyAvg != src.BusyAvg || h.BusyMax != src.BusyMax ||
				h.Cores != src.Cores || h.PerCore[0] != src.PerCore[0] {
				t.Errorf("host %s: %+v, want its own busy %v/%v/%v", h.Host, h, src.BusyMin, src.BusyAvg, src.BusyMax)
			}
		}
	}
}
