package method_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/wire"
)

// TestLabIPIP carries IPv4 in IPv4 (kernel lab: the host lacks
// CONFIG_NET_IPIP): IP protocol 4 with the overlay packet right behind.
func TestLabIPIP(t *testing.T) {
	labTunnel(t, method.IPIP{}, method.IPv4, nil, tunnelWire{
		underlay: method.IPv4,
		proto:    wire.ProtoIPIP,
		check: func(f wire.Frame) string {
			if f.Encap != wire.EncapIP4 || f.Inner == nil || f.Inner.Family != wire.IPv4 {
				return "want an IPv4 packet right behind the outer header"
			}
			return ""
		},
	})
}
