package sshtest_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/sshhost"
	"github.com/tunbench/tunbench/internal/sshhost/sshtest"
)

// Three sites on a bridge: site 0 reaches site 2 over the underlay, both
// from its namespace directly and through a command run by its sshd.
func TestBridgeThreeSites(t *testing.T) {
	s := sshtest.New(t, 3)
	s0, s2 := s.Site[0], s.Site[2]
	for _, addr := range []string{s2.Addr4, s2.Addr6} {
		if out, err := exec.Command("ip", "netns", "exec", s0.Namespace, "ping", "-c", "1", "-W", "2", addr).CombinedOutput(); err != nil {
			t.Errorf("ping %s from %s: %v: %s", addr, s0.Namespace, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := sshhost.Dial(ctx, s0.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, _, err := h.Run(ctx, "ping", "-c", "1", "-W", "2", s2.Addr4); err != nil {
		t.Errorf("ping from a command run by site 0's sshd: %v", err)
	}
	// The command runs in site 0's network namespace: it sees its own
	// underlay device.
	out, _, err := h.Run(ctx, "ip", "-o", "addr", "show", "dev", s0.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if want := s0.Addr4 + "/24"; !strings.Contains(string(out), want) {
		t.Errorf("ip addr on site 0 = %q, want it to hold %s", out, want)
	}
}
