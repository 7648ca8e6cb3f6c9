package ssh_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/testbed"
)

// TestOpenRefusesMTUWithoutHostChanges: without host_changes a matrix
// asking for another MTU than the hosts' is refused before the run,
// naming the option; with it (and the control connection elsewhere) the
// testbed opens, and the refusal that remains is the one for a
// connection over the device, naming control_over_dev.
func TestOpenRefusesMTUWithoutHostChanges(t *testing.T) {
	sites := sshtest.New(t, 2)
	bin, _ := tunbench(t)
	s := sshScenario(sites, bin, "native")
	s.MTUs = []int{9000}
	cfg := config(t, sites, s, testbed.NewID())
	tb, err := ssh.Open(context.Background(), cfg)
	if err == nil {
		tb.Close()
		t.Fatal("a host's MTU would change without host_changes, and Open went ahead")
	}
	for _, want := range []string{"has MTU 1500, and mtus asks for 9000", "ssh.host_changes: true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	// The sites are dialed from inside their namespaces, over their
	// underlay devices: host_changes alone is refused for that.
	s = withHosts(t, s, func(x *ssh.Section) { x.HostChanges = true })
	cfg = config(t, sites, s, testbed.NewID())
	cfg.MTUs = s.MTUs
	tb, err = ssh.Open(context.Background(), cfg)
	if err == nil {
		tb.Close()
		t.Fatal("host changes over the control connection's device were not refused")
	}
	if !strings.Contains(err.Error(), "control_over_dev: true") {
		t.Errorf("refusal %q does not name control_over_dev", err)
	}
}
