package cli

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method/wireguard"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testenv"
)

// TestSSHBoringTunJumbo is issue 39's reproduction: boringtun over two
// sshtest hosts at underlay MTU 9000 with offloads off (host_changes),
// tests tcp_stream, connect and recover, a one-second stream. boringtun
// read packets at 1500 bytes for up to a second after its device's MTU
// was raised, and the stream, right after the set-up, received 0 bytes in
// a cell that stood as ok. Now the cell is ok because the stream carried
// data, and the TUN device tunbench creates for boringtun on each host is
// gone after the run with everything else.
func TestSSHBoringTunJumbo(t *testing.T) {
	t.Parallel()
	testenv.NeedProgram(t, "boringtun-cli", wireguard.BoringTunInstall)
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2, sshtest.Management())
	addrsSettled(t, sites)
	scen := mgmtScenario(t, sites, "testbed: ssh\nmethods: [boringtun]\nmtus: [9000]\noffloads: [off]\nrepetitions: 1\nduration: 1s\nomit: 0s\nlatency: 0s\n"+
		"tests: [tcp_stream, connect, recover]\nrecover:\n  down: 1s\n", "  host_changes: true\n  binary: "+bin+"\n")
	out, db, export, err := runMgmt(t, sites, bin, scen)
	if err != nil {
		t.Fatalf("tunbench run: %v\n%s", err, out)
	}
	cells := exportOf(t, export).Cells
	if len(cells) != 1 {
		t.Fatalf("%d cells, want 1\n%s", len(cells), out)
	}
	c := cells[0]
	switch {
	case c.Status != result.StatusOK:
		t.Errorf("cell %s: %s", c.Status, c.Error)
	case c.Params.UnderlayMTU != 9000 || c.Params.OverlayMTU != 8940:
		t.Errorf("MTU underlay %d overlay %d, want 9000 and 8940", c.Params.UnderlayMTU, c.Params.OverlayMTU)
	case c.Throughput == nil || c.Throughput.Bytes == 0:
		t.Errorf("throughput %+v: the stream carried nothing", c.Throughput)
	case c.Connect == nil || c.Recover == nil || !c.Recover.Recovered:
		t.Errorf("connect %+v, recover %+v: want both measured, recovered", c.Connect, c.Recover)
	default:
		t.Logf("boringtun at MTU 9000: %.2f Gbit/s, %d bytes in %.2f s", c.Throughput.BitsPerSecond/1e9, c.Throughput.Bytes, c.Throughput.Seconds)
	}
	noSSHLeftovers(t, sites, db)
}
