package method_test

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// TestLabWANNetem applies the wan dimension's netem qdisc (runner.WANArgs,
// 20 ms one-way delay on both underlay devices) and checks that the round
// trip grew by 40 ms. The host kernel lacks netem (it is skipped there);
// the kernel lab's stock kernel has it.
func TestLabWANNetem(t *testing.T) {
	l := testbedtest.New(t, 1500)
	_ = exec.Command("modprobe", "sch_netem").Run()
	ctx := context.Background()
	w := &result.WANParams{DelayMs: 20, Qdisc: "netem"}
	for _, ep := range l.Endpoints() {
		argv := runner.WANArgs(ep.Dev, w)
		if out, err := ep.Run(ctx, argv...); err != nil {
			if strings.Contains(string(out), "nknown") || strings.Contains(string(out), "not found") {
				t.Skipf("kernel lacks netem (CONFIG_NET_SCH_NETEM): %s; runs in the kernel lab", strings.TrimSpace(string(out)))
			}
			t.Fatalf("%v: %v: %s", argv, err, out)
		}
	}
	out, err := l.A.Run(ctx, "ping", "-n", "-c", "5", "-i", "0.2", l.B.Addr("ipv4").String())
	if err != nil {
		t.Fatalf("ping: %v: %s", err, out)
	}
	m := regexp.MustCompile(`= ([0-9.]+)/`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no rtt in ping output:\n%s", out)
	}
	minRTT, _ := strconv.ParseFloat(string(m[1]), 64)
	if minRTT < 40 || minRTT > 60 {
		t.Errorf("min RTT %.2f ms with 20 ms of netem delay each way, want 40 to 60", minRTT)
	}
	t.Logf("min RTT %.2f ms", minRTT)
}
