package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testenv"
)

// TestConnectRecoverRun runs the documented command with the built
// binary: the connect and recover tests for native, vxlan, wireguard-go
// and ipsec in one run, two repetitions, a temporary database. Every
// repetition must be ok with its figures, the rekey stream for the two
// methods that force one, and the export must carry them.
func TestConnectRecoverRun(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipMissing(t, "needs root (network namespaces)")
	}
	for _, p := range []struct{ program, fix string }{
		{"iperf3", "apt-get install iperf3"},
		{"wireguard-go", "scripts/install.sh test"},
		{"charon", "scripts/install.sh test"},
		{"swanctl", "apt-get install strongswan-swanctl"},
	} {
		if p.program == "charon" {
			if _, err := os.Stat("/usr/lib/ipsec/charon"); err == nil {
				continue
			}
		}
		testenv.NeedProgram(t, p.program, p.fix)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tunbench")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build tunbench: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "t.db")
	// The down time from the scenario (1 s, shorter than the default).
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte("recover: {down: 1s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(bin, "run", "-f", scen, "--methods", "native,vxlan,wireguard-go,ipsec", "--tests", "connect,recover",
		"--reps", "2", "--db", db, "--quiet")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run: %v\n%s", err, out)
	}
	js, err := exec.Command(bin, "results", "export", "latest", "--db", db).Output()
	if err != nil {
		t.Fatalf("tunbench results export: %v", err)
	}
	var doc struct {
		Cells []result.Cell `json:"cells"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, c := range doc.Cells {
		seen[c.Method]++
		if c.Status != result.StatusOK {
			t.Errorf("%s rep %d: %s: %s", c.Method, c.Repetition, c.Status, c.Error)
			continue
		}
		k, r := c.Connect, c.Recover
		if k == nil || r == nil {
			t.Errorf("%s rep %d: connect %v, recover %v: want both", c.Method, c.Repetition, k, r)
			continue
		}
		if k.Setup < 0 || k.Handshake <= 0 || k.Total < k.Handshake || k.Probes < 1 {
			t.Errorf("%s rep %d: connect %+v", c.Method, c.Repetition, *k)
		}
		// The harness's share of the handshake (starting the probe) stays
		// far below the 1 s a cell may spend beyond the tunnel's set-up.
		if k.Harness > 1 {
			t.Errorf("%s rep %d: harness cost %.3f s, want at most 1 s", c.Method, c.Repetition, k.Harness)
		}
		// The outage spans the down time, give or take an answer in flight
		// when the device went down.
		if !r.Recovered || r.Lost < 1 || r.Down < 1 || r.Recovery < 0 || r.Outage < 0.9*r.Down {
			t.Errorf("%s rep %d: recover %+v", c.Method, c.Repetition, *r)
		}
		rekeys := c.Method == "wireguard-go" || c.Method == "ipsec"
		switch {
		case rekeys && (r.Rekey == nil || r.Rekey.Error != "" || r.Rekey.Sent < 100):
			t.Errorf("%s rep %d: rekey %+v", c.Method, c.Repetition, r.Rekey)
		case !rekeys && r.Rekey != nil:
			t.Errorf("%s rep %d: a rekey record, but %s cannot force one", c.Method, c.Repetition, c.Method)
		}
	}
	for _, m := range []string{"native", "vxlan", "wireguard-go", "ipsec"} {
		if seen[m] != 2 {
			t.Errorf("%s: %d cells, want 2", m, seen[m])
		}
	}
	if !strings.Contains(string(out), "connect and recover") {
		t.Errorf("the table has no connect and recover section:\n%s", out)
	}
}
