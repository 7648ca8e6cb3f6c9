package cli

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

// sshFamilyMethods are one method of each family with a daemon, a
// database, a key exchange or a BPF program on the hosts, besides the
// kernel's srv6, and the mesh VPNs (nebula's lighthouse, tailscale's
// control server): what a run over real hosts must set up, measure and
// leave no trace of.
var sshFamilyMethods = []string{"ovs-vxlan", "ipsec", "openvpn", "srv6", "ebpf-geneve", "wireguard-go", "ssh-tunnel", "nebula", "tailscale"}

// TestSSHRunEveryFamily: "tunbench run" over two sshtest hosts with a
// method of every family (issue 21): every cell is ok, its implementation
// is recorded, and afterwards neither host holds a device, a process, a
// file, a BPF program or pin, xfrm state or policy of the run. The
// controller reaches the hosts over their management network
// (sshtest.Management), as it would reach servers with a management
// interface: OVS's netdev datapath, the one this kernel offers, takes
// the underlay's addresses to its bridge while it runs (docs/ssh.md).
func TestSSHRunEveryFamily(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2, sshtest.Management())
	scen := mgmtScenario(t, sites, fmt.Sprintf("testbed: ssh\nmethods: [%s]\ncongestion_control: [cubic]\nrepetitions: 1\nduration: 2s\nomit: 0s\nlatency: 0s\ntests: [tcp_stream]\n",
		strings.Join(sshFamilyMethods, ", ")), "  binary: "+bin+"\n")
	out, db, export, err := runMgmt(t, sites, bin, scen)
	if err != nil {
		t.Fatalf("tunbench run on testbed ssh: %v\n%s", err, out)
	}
	got := map[string]result.Cell{}
	for _, c := range exportOf(t, export).Cells {
		got[c.Method] = c
	}
	for _, m := range sshFamilyMethods {
		c, ok := got[m]
		switch {
		case !ok:
			t.Errorf("%s: no cell", m)
		case c.Status != result.StatusOK:
			t.Errorf("%s: %s: %s", m, c.Status, c.Error)
		case c.Throughput == nil || c.Throughput.BitsPerSecond <= 0:
			t.Errorf("%s: no throughput measured", m)
		case c.Implementation == "":
			t.Errorf("%s: no implementation recorded", m)
		}
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out)
	}
	noSSHLeftovers(t, sites, db)
	for _, st := range sites.Site {
		if left := kernelStateIn(st.Namespace, st.Dev); len(left) > 0 {
			t.Errorf("%s: kernel state left by the run: %v", st.Config.Name, left)
		}
	}
	for _, id := range storedRuns(t, db) {
		if pins, _ := filepath.Glob(filepath.Join(ebpf.PinRoot, testbed.DevicePrefix(id)+"-*")); len(pins) > 0 {
			t.Errorf("BPF pins of run %s left: %v", id, pins)
		}
	}
}

// kernelStateIn lists the xfrm states and policies of namespace ns and the
// tc filters on its device dev: what IPsec and the eBPF tunnels create
// besides devices.
func kernelStateIn(ns, dev string) []string {
	var left []string
	for _, argv := range [][]string{
		{"ip", "-n", ns, "xfrm", "state"},
		{"ip", "-n", ns, "xfrm", "policy"},
		{"tc", "-n", ns, "filter", "show", "dev", dev, "ingress"},
		{"tc", "-n", ns, "filter", "show", "dev", dev, "egress"},
	} {
		out, _ := exec.Command(argv[0], argv[1:]...).Output()
		if s := strings.TrimSpace(string(out)); s != "" {
			left = append(left, strings.Join(argv[3:], " ")+": "+s)
		}
	}
	return left
}
