package ipsec_test

import (
	"net/netip"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ipsec"
)

// TestIPsecECMPAutoListens: with datapath auto, the declaration covers
// what either data path opens (the kernel lab's xfrm: 500 and 4500 a
// side; this host's kernel-libipsec: a picked port and 4500+i a tunnel),
// and requires only the port both open, 4500.
func TestIPsecECMPAutoListens(t *testing.T) {
	m := ipsec.NewIPsecECMP()
	opts, err := method.ParseOptions(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	decl, _ := method.ListensOf(m, opts, method.IPv4)
	sock := func(port uint16) method.Socket {
		return method.Socket{Proto: "udp", Local: netip.AddrPortFrom(netip.IPv4Unspecified(), port)}
	}
	for name, open := range map[string][]method.Socket{
		"xfrm":     {sock(500), sock(4500)},
		"libipsec": {sock(40001), sock(4500), sock(40002), sock(4501)},
	} {
		for _, s := range open {
			found := false
			for _, l := range decl {
				found = found || l.Matches(s, netip.Addr{}, netip.Addr{})
			}
			if !found {
				t.Errorf("%s: %v not declared", name, s)
			}
		}
		for _, l := range decl {
			if l.Port == 0 {
				continue
			}
			found := false
			for _, s := range open {
				found = found || l.Matches(s, netip.Addr{}, netip.Addr{})
			}
			if !found {
				t.Errorf("%s: declared port %d not open", name, l.Port)
			}
		}
	}
}
