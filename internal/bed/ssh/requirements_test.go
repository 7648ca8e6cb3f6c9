package ssh_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/testbed"
)

// TestSSHRequirementsRefusedPerHost: a host whose kernel lacks a method's
// option is refused when the testbed opens, by its own kernel config
// read over SSH (site 0 presents this kernel's config without
// CONFIG_VXLAN: sshtest.Site.PresentKernelConfig), in one error with the
// other host's gap (a program it lacks, with its install line); the other
// host, with this machine's config, carries vxlan; and nothing is created
// on either host: no agent or other process, no run directory, no device.
func TestSSHRequirementsRefusedPerHost(t *testing.T) {
	sites := sshtest.New(t, 2)
	bin, _ := tunbench(t)
	kconfig, err := sshtest.KernelConfigWithout("CONFIG_VXLAN")
	if err != nil {
		t.Fatal(err)
	}
	if err := sites.Site[0].PresentKernelConfig(kconfig); err != nil {
		t.Fatal(err)
	}
	s := sshScenario(sites, bin, "native", "vxlan")
	id := testbed.NewID()
	cfg := config(t, sites, s, id)
	// vxlan's requirement as the method declares it; a method needing a
	// program neither host has (the sites share this machine's PATH).
	cfg.Methods = []ssh.MethodNeeds{
		{Name: "native"},
		{Name: "vxlan", Requirements: []method.Requirement{{Kernel: "CONFIG_VXLAN", Module: "vxlan"}}},
		{Name: "needs-a-tool", Requirements: []method.Requirement{{Program: "tunbench-no-such-tool", Package: "no-such-package"}}},
	}
	_, err = ssh.Open(context.Background(), cfg)
	if err == nil {
		t.Fatal("opened although site 0's kernel lacks CONFIG_VXLAN")
	}
	msg := err.Error()
	t.Logf("refused:\n%s", msg)
	s0, s1 := sites.Site[0].Config.Name, sites.Site[1].Config.Name
	for _, want := range []string{
		"host " + s0 + ": method vxlan: kernel lacks CONFIG_VXLAN (the host's kernel cannot carry vxlan)",
		"host " + s0 + " lacks tunbench-no-such-tool: apt-get install -y --no-install-recommends no-such-package",
		"host " + s1 + " lacks tunbench-no-such-tool: apt-get install -y --no-install-recommends no-such-package",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "host "+s1+": method") {
		t.Errorf("site 1 runs this machine's kernel, which has CONFIG_VXLAN, yet:\n%s", msg)
	}
	nothingCreated(t, sites, id)
}

// TestSSHRequirementsMetOpens: with this machine's kernel config on both
// sites, a method whose kernel option the kernel has opens the testbed
// (the check reads the real config over SSH and refuses nothing).
func TestSSHRequirementsMetOpens(t *testing.T) {
	sites := sshtest.New(t, 2)
	bin, _ := tunbench(t)
	s := sshScenario(sites, bin, "native")
	cfg := config(t, sites, s, testbed.NewID())
	// CONFIG_VETH: every kernel that runs these tests has it (the sites
	// are joined by a veth pair).
	cfg.Methods = []ssh.MethodNeeds{{Name: "native", Requirements: []method.Requirement{{Kernel: "CONFIG_VETH", Module: "veth"}}}}
	tb, err := ssh.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
}

// nothingCreated checks that nothing of run id exists on the sites: no
// process in their namespaces but their sshd (no agent), no run
// directory, no device named for the run.
func nothingCreated(t *testing.T, sites *sshtest.Sites, id string) {
	t.Helper()
	noLeftovers(t, id)
	for _, ns := range sites.Namespaces {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		for _, pid := range strings.Fields(string(out)) {
			comm, err := os.ReadFile("/proc/" + pid + "/comm")
			if err != nil || strings.TrimSpace(string(comm)) == "sshd" {
				continue
			}
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			t.Errorf("process %s (%s) runs in %s although the hosts were refused", pid, strings.ReplaceAll(string(cmdline), "\x00", " "), ns)
		}
	}
}
