package cli

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
)

// TestSpreadRefused: spread where it cannot spread is refused by the
// built binary with the exit status of bad input, naming the field, why
// and the fix, before anything is created (no database).
func TestSpreadRefused(t *testing.T) {
	bin := tunbenchBinary(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"fillers", []string{"--methods", "wireguard-go", "--tunnels", "10", "--tests", "parallel", "--streams", "4", "--streams-per-process", "1", "--spread"}, []string{
			"spread: wireguard-go over ipv4 cannot spread streams over its tunnels: one tunnel is one peer, and every peer but the measured one is a filler that carries no traffic: drop spread or drop wireguard-go"}},
		{"more processes than tunnels", []string{"--methods", "vxlan", "--tunnels", "2,100", "--tests", "parallel", "--streams", "4", "--streams-per-process", "1", "--spread"}, []string{
			"spread: 4 streams at streams_per_process 1 are 4 iperf3 processes, each over a tunnel of its own, and tunnels [2 100] has 2: give every tunnel count at least 4"}},
		{"no parallel test", []string{"--methods", "vxlan", "--tunnels", "4", "--spread"}, []string{
			"spread: spread spreads the parallel test's iperf3 processes over the tunnels, and tests has no parallel: add parallel to tests or drop spread"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runRefused(t, bin, tc.args, tc.want...)
		})
	}
}

// TestSpreadVXLANEndToEnd: the built binary runs vxlan with 4 devices and
// the parallel test's 4 processes (one stream each) spread over them, on
// this host. Every repetition is ok, the cell's key and params say
// spread, and side b's kernel counted, on each of the 4 tunnels' own
// devices (the measured one and three others), what a process sent
// across it: at least a megabyte each.
func TestSpreadVXLANEndToEnd(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	cmd := exec.Command(bin, "run", "--db", db, "--export", filepath.Join(dir, "run.json"), "--quiet",
		"--methods", "vxlan", "--tunnels", "4", "--tests", "parallel", "--streams", "4", "--streams-per-process", "1", "--spread",
		"--duration", "2s", "--omit", "0s", "--latency", "0s", "--reps", "2")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	exp, err := exec.Command(bin, "results", "export", "latest", "--db", db).Output()
	if err != nil {
		t.Fatalf("results export: %v", err)
	}
	var doc export.Document
	if err := json.Unmarshal(exp, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cells) != 2 {
		t.Fatalf("%d cells stored, want 2 (one cell, two repetitions)", len(doc.Cells))
	}
	want := method.SpreadTunnels(4, 4)
	for _, c := range doc.Cells {
		if c.Status != result.StatusOK {
			t.Errorf("repetition %d: status %s (%s), want ok", c.Repetition, c.Status, c.Error)
			continue
		}
		if !c.Params.Spread || c.Params.Tunnels != 4 || !strings.Contains(c.Key, "/tunnels4/spread") {
			t.Errorf("repetition %d: key %q, params' spread %v and tunnels %d: want spread over 4", c.Repetition, c.Key, c.Params.Spread, c.Params.Tunnels)
		}
		par := c.Parallel
		if par == nil || len(par.Processes) != 4 || len(par.Tunnels) != 4 {
			t.Fatalf("repetition %d: parallel record %+v: want 4 processes over 4 tunnels", c.Repetition, par)
		}
		devices := map[string]bool{}
		for i, st := range par.Tunnels {
			_, b := method.ScaleOverlay("ipv4", want[i], method.MeasuredTunnel(4))
			if st.Tunnel != want[i] || st.Address != b.Addr().String() || st.Error != "" || st.Device == "" {
				t.Errorf("repetition %d, process %d: tunnel %+v: want tunnel %d at %s, its device read", c.Repetition, i, st, want[i], b.Addr())
			}
			if st.RxBytes < 1<<20 {
				t.Errorf("repetition %d, process %d: device %s of tunnel %d received %d bytes, want a process's load (1 MB or more)", c.Repetition, i, st.Device, st.Tunnel, st.RxBytes)
			}
			devices[st.Device] = true
		}
		if len(devices) != 4 {
			t.Errorf("repetition %d: tunnels %+v: want 4 distinct devices", c.Repetition, par.Tunnels)
		}
		t.Logf("repetition %d: %.2f Gbit/s over %+v", c.Repetition, par.BitsPerSecond/1e9, par.Tunnels)
	}
}
