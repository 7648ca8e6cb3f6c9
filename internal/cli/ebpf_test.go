package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ebpftun"
	"github.com/tunbench/tunbench/internal/method/methodtest"
)

func TestEBPFStatsNothingRunning(t *testing.T) {
	root := t.TempDir()
	code, out, errOut := run(t, "ebpf", "stats", "--root", root)
	if code != 0 || !strings.Contains(out, "no eBPF data path is running (nothing pinned under "+root+")") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestEBPFStats sets ebpf-vxlan up, sends traffic and reads the counters
// back with "tunbench ebpf stats".
func TestEBPFStats(t *testing.T) {
	if err := ebpf.Probe(); err != nil {
		t.Skipf("the eBPF data path cannot run here: needs %v", err)
	}
	l, env, path := methodtest.SetupTunnels(t, ebpftun.EBPFVXLAN, method.IPv4, 1500, 100, nil)
	methodtest.Ping(t, l, path)
	name := env.Prefix + "-a"
	code, out, errOut := run(t, "ebpf", "stats", name, "--max-rules", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		name + ": 100 rules, 1 decap entries",
		"rule 1 198.19.0.2/32 -> 198.18.0.2 vxlan vni 42: packets 2 bytes 168",
		"... 97 more rules",
		"decap 1 vxlan vni 42: packets 2 bytes 168",
		"no rule: drops truncated=0 bad-header=0 encap-failed=0 decap-failed=0",
		"not ours: passed 0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	c, err := ebpftun.EBPFVXLAN.Counters(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := c["ebpf.b.decap"]; got != "vxlan vni 42: packets 2 bytes 168" {
		t.Errorf("cell counters of b's decap entry %q", got)
	}
	if got := c["ebpf.b.not-ours"]; got != "passed 0" {
		t.Errorf("cell counter of b's tunnel packets that were not tunbench's %q", got)
	}
}
