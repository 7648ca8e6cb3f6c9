package ipsec

import (
	"context"
	"path/filepath"

	"github.com/tunbench/tunbench/internal/testbed"
)

// Exported for the tests of package method_test.

// IPsecChild is a CHILD_SA as swanctl lists it.
type IPsecChild = childSA

// IPsecSAs lists the CHILD_SAs of the charon whose private directory (the
// one holding run/) is dir.
func IPsecSAs(ctx context.Context, ep *testbed.Endpoint, dir string) ([]IPsecChild, error) {
	c := &charon{ep: ep, run: filepath.Join(dir, "run")}
	out, err := c.swanctl(ctx, "--list-sas", "--pretty")
	if err != nil {
		return nil, err
	}
	sas, err := parseListSAs(out)
	if err != nil {
		return nil, err
	}
	var children []IPsecChild
	for _, sa := range sas {
		children = append(children, sa.Children...)
	}
	return children, nil
}

// LibipsecMaxMTU is the largest MTU kernel-libipsec's TUN device carries.
const LibipsecMaxMTU = libipsecMaxMTU

// NewIPsecWithConfigHook returns an "ipsec" method whose Setup passes each
// side's PSK through f before writing it.
func NewIPsecWithConfigHook(f func(side string, psk *string)) *IPsec {
	return &IPsec{configHook: f}
}

// RunTableBase and RunTableSpan bound the routing tables of runs' charons.
const (
	RunTableBase = runTableBase
	RunTableSpan = runTableSpan
)

// MaxChildren is the most CHILD_SAs ipsec sets up.
const MaxChildren = maxIPsecChildren
