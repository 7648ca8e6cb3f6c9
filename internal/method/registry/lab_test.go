package registry_test

import (
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/lab/labtest"
)

// labPackages are the packages whose TestLab* tests need a kernel this
// host may lack: the methods' core (netem), the kernel tunnels, kernel
// WireGuard, IPsec over xfrm, OVS's kernel datapath, the eBPF tunnels'
// interoperation with the kernel's devices, and every method through two
// agents (this package), and the L2TPv3 and MACsec families.
var labPackages = []string{
	"github.com/tunbench/tunbench/internal/method",
	"github.com/tunbench/tunbench/internal/method/kernel",
	"github.com/tunbench/tunbench/internal/method/wireguard",
	"github.com/tunbench/tunbench/internal/method/ipsec",
	"github.com/tunbench/tunbench/internal/method/ovs",
	"github.com/tunbench/tunbench/internal/method/ebpftun",
	"github.com/tunbench/tunbench/internal/method/registry",
	"github.com/tunbench/tunbench/internal/method/l2tp",
	"github.com/tunbench/tunbench/internal/method/macsec",
	"github.com/tunbench/tunbench/internal/method/fou",
}

// TestKernelLab runs every TestLab* test of labPackages inside a stock
// Debian kernel booted under qemu, in one boot. Each guest test is
// reported as a subtest named after its package ("kernel/TestLabGRE")
// with its output.
//
// It runs in parallel with TestMethodsThroughAgents, the package's other
// long test: the guest is emulated (about one core) and the agents wait
// on iperf3's seconds, so side by side the package takes the longer of
// the two rather than their sum (it is make test's longest package).
func TestKernelLab(t *testing.T) {
	t.Parallel()
	labtest.RunPackagesInGuest(t, labPackages, "^TestLab", labtest.Options{Timeout: 25 * time.Minute})
}
