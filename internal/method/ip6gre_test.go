package method_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/wire"
)

// TestLabIP6GRE carries IPv4 and IPv6 over GRE on the IPv6 underlay
// (kernel lab: the host lacks CONFIG_IPV6_GRE): next header 47 right in the
// outer header, no key.
func TestLabIP6GRE(t *testing.T) {
	for _, family := range (method.IP6GRE{}).Families() {
		t.Run(family, func(t *testing.T) {
			labTunnel(t, method.IP6GRE{}, family, nil, tunnelWire{
				underlay: method.IPv6,
				proto:    wire.ProtoGRE,
				check:    checkGRE(0, l3Protocols...),
			})
		})
	}
}
