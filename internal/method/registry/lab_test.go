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
}

// TestKernelLab runs every TestLab* test of labPackages inside a stock
// Debian kernel booted under qemu, in one boot. Each guest test is
// reported as a subtest named after its package ("kernel/TestLabGRE")
// with its output.
func TestKernelLab(t *testing.T) {
	labtest.RunPackagesInGuest(t, labPackages, "^TestLab", labtest.Options{Timeout: 25 * time.Minute})
}
