package method_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/lab/labtest"
)

// TestKernelLab runs every TestLab* test of this package (the methods whose
// kernel feature this host lacks: geneve, gre, gretap, ipip, ip6ip6,
// ip6gre, wireguard, ipsec with the xfrm data path, ovs with the kernel
// datapath) inside a stock Debian kernel booted under qemu, in one boot.
// Each guest test is reported as a subtest with its output.
func TestKernelLab(t *testing.T) {
	labtest.RunTestsInGuest(t, "github.com/tunbench/tunbench/internal/method", "^TestLab")
}
