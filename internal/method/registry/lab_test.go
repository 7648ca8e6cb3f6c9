package registry_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/lab/labtest"
	"github.com/tunbench/tunbench/internal/method/registry"
)

// labPackages are the packages whose TestLab* tests need a kernel this
// host may lack: the methods' core (netem), the kernel tunnels, kernel
// WireGuard, IPsec over xfrm, OVS's kernel datapath, the eBPF tunnels'
// interoperation with the kernel's devices, and every method through two
// agents (this package), and the L2TPv3 and MACsec families. The
// kernel package comes before this one: its tests load ip_gre, ipip and
// the other modules that add fallback devices (gre0, tunl0...) to every
// namespace, and this package's agent tests compare each namespace's
// links before and after; loaded during one of them, a module's
// fallback devices look like links left behind (a clean-clone run with
// this package first failed so). With more than one lane the guest
// loads those modules before its lanes start (labModules). Each lane
// takes the next package not yet started, so the longest come first (in
// a clean-clone run's one lane: kernel 248 s, ipsec 219 s, registry
// 168 s, ovs 165 s, ebpftun 95 s, l2tp 85 s).
var labPackages = []string{
	"github.com/tunbench/tunbench/internal/method/kernel",
	"github.com/tunbench/tunbench/internal/method/ipsec",
	"github.com/tunbench/tunbench/internal/method/registry",
	"github.com/tunbench/tunbench/internal/method/ovs",
	"github.com/tunbench/tunbench/internal/method/ebpftun",
	"github.com/tunbench/tunbench/internal/method/l2tp",
	"github.com/tunbench/tunbench/internal/method",
	"github.com/tunbench/tunbench/internal/method/wireguard",
	"github.com/tunbench/tunbench/internal/method/macsec",
	"github.com/tunbench/tunbench/internal/method/fou",
}

// labFallbackModules create fallback tunnel devices in every namespace
// when they load (ip_gre: gre0, gretap0, erspan0; ip6_gre: ip6gre0; ipip:
// tunl0; ip6_tunnel: ip6tnl0; sit: sit0). With more than one lane the
// guest loads them, and every method's kernel modules, before its lanes
// start, so that a module one test loads never adds links to another
// test's namespaces.
var labFallbackModules = []string{"ip_gre", "ip6_gre", "ipip", "ip6_tunnel", "sit"}

// labModules are labFallbackModules and the modules of every method's
// kernel requirements.
func labModules() []string {
	mods := slices.Clone(labFallbackModules)
	for _, m := range registry.Builtin().All() {
		for _, r := range m.Requirements() {
			if r.Module != "" && !slices.Contains(mods, r.Module) {
				mods = append(mods, r.Module)
			}
		}
	}
	return mods
}

// TestKernelLab runs every TestLab* test of labPackages inside a stock
// Debian kernel booted under qemu, in one boot: one test binary after the
// other, or, with TUNBENCH_LAB_LANES=N, N at once (two lanes did not pay
// in a clean-clone run: the guest's tests took 1199 s against 1163 s and
// 1344 s with one, and the load they added beside the other packages
// failed three of their tests on timing). Each guest test is
// reported as a subtest named after its package ("kernel/TestLabGRE")
// with its output, and the host test logs where the guest's time went
// ("time: kernel-lab/..." lines, which make test's summary lists).
//
// The guest may take 40 minutes: about 20 in a clean-clone run here, but
// emulated, so on a loaded machine it stretches (a clean-clone run beside
// a benchmark took more than 25 and was killed at the old bound); make
// test's -timeout 60m still bounds the whole.
//
// It runs in parallel with TestMethodsThroughAgents, the package's other
// long test: the guest is emulated and the agents wait on iperf3's
// seconds, so side by side the package takes the longer of the two
// rather than their sum (it is make test's longest package).
func TestKernelLab(t *testing.T) {
	t.Parallel()
	labtest.RunPackagesInGuest(t, labPackages, "^TestLab", labtest.Options{Timeout: 40 * time.Minute, Modules: labModules(), Reserved: true})
}
