package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/scenario"
)

// TestPreflightSSHAsksNothingOfThisMachine: on testbed ssh this machine
// is only the controller, so neither its kernel (here faked without the
// methods' options), nor its programs, nor root decide anything: the
// hosts are checked by their own kernels when the testbed opens. The same
// scenario on the local testbed is refused for this machine's kernel.
func TestPreflightSSHAsksNothingOfThisMachine(t *testing.T) {
	env := kernelWithout("CONFIG_VXLAN", "CONFIG_VETH")
	env.Root = func() bool { return false }
	reg := registry.Builtin()
	s := scenario.Default()
	s.Methods = []string{"native", "vxlan"}
	s.Testbed = "ssh"
	if err := checkHere(s, reg, env); err != nil {
		t.Errorf("testbed ssh refused for this machine: %v", err)
	}
	s.Testbed = "local"
	err := checkHere(s, reg, env)
	for _, want := range []string{"method vxlan", "CONFIG_VXLAN missing", "testbed local", "CONFIG_VETH missing", "not running as root"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("testbed local: %v, want it to say %q", err, want)
		}
	}
}

// TestSSHRunRefusesHostKernelWithoutOption: "tunbench run" on testbed ssh
// with vxlan, where site 0's kernel config lacks CONFIG_VXLAN (it
// presents this kernel's config without it: sshtest's
// PresentKernelConfig), is refused before anything is created, naming the
// host, the method and the option; site 1, with this machine's config, is
// not named; and nothing is left on either host: no agent or other
// process, no run directory, no device.
func TestSSHRunRefusesHostKernelWithoutOption(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	kconfig, err := sshtest.KernelConfigWithout("CONFIG_VXLAN")
	if err != nil {
		t.Fatal(err)
	}
	if err := sites.Site[0].PresentKernelConfig(kconfig); err != nil {
		t.Fatal(err)
	}
	scen := sshYAML(t, sites, bin, sites.KnownHosts, "2s", "tests: [tcp_stream]\n") // methods: native, vxlan
	db := filepath.Join(t.TempDir(), "r.db")
	out, err := inSite(sites, bin, "run", "-f", scen, "--db", db).CombinedOutput()
	if err == nil {
		t.Fatalf("run succeeded although site 0's kernel lacks CONFIG_VXLAN:\n%s", out)
	}
	t.Logf("refused:\n%s", out)
	s0, s1 := siteName(sites, 0), siteName(sites, 1)
	want := "host " + s0 + ": method vxlan: kernel lacks CONFIG_VXLAN (the host's kernel cannot carry vxlan)"
	if !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if strings.Contains(string(out), "host "+s1+": method") {
		t.Errorf("site 1 (this machine's kernel, with CONFIG_VXLAN) is named:\n%s", out)
	}
	if runs := storedRuns(t, db); len(runs) != 0 {
		t.Errorf("runs stored although the hosts were refused: %v", runs)
	}
	noSSHLeftovers(t, sites, db)
}
