package kubernetes_test

import (
	"net/netip"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/bed/kubernetes"
)

// TestParseAddrs reads "ip -o addr show" as captured on this machine.
func TestParseAddrs(t *testing.T) {
	data, err := os.ReadFile("testdata/ip-o-addr.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []kubernetes.Addr{
		{Dev: "lo", Prefix: netip.MustParsePrefix("127.0.0.1/8")},
		{Dev: "lo", Prefix: netip.MustParsePrefix("::1/128")},
		{Dev: "eth0", Prefix: netip.MustParsePrefix("192.0.2.2/24")},
		{Dev: "eth0", Prefix: netip.MustParsePrefix("fd00::2/64")},
		{Dev: "eth0", Prefix: netip.MustParsePrefix("fe80::fc:ff:fe00:1/64")},
	}
	got := kubernetes.ParseAddrs(string(data))
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if got := kubernetes.ParseAddrs("3: eth0@if7    inet 10.244.1.5/24 brd 10.244.1.255 scope global eth0\\       valid_lft forever"); len(got) != 1 || got[0].Dev != "eth0" {
		t.Errorf("a pod's veth (eth0@if7): %v", got)
	}
}
