package kernel

import (
	"context"

	"github.com/tunbench/tunbench/internal/method"
)

// IP6GRE is the kernel's layer-3 GRE tunnel over the IPv6 underlay
// (ip6gre), without key, carrying IPv4 or IPv6. Like IP6IP6 it is set up
// with "encaplimit none": no 8-byte encapsulation limit option.
//
// Options: none.
type IP6GRE struct{}

const ip6greSuffix = "-6gre"

func (IP6GRE) Name() string       { return "ip6gre" }
func (IP6GRE) Families() []string { return []string{method.IPv4, method.IPv6} }
func (IP6GRE) Implementation() string {
	return "kernel ip6gre, encaplimit none (netlink)"
}

// Overhead is the outer IPv6 header (40) + the basic GRE header (4),
// whatever the inner family.
func (IP6GRE) Overhead(string) int { return 40 + 4 }

// UnderlayFamily is IPv6: ip6gre runs over IPv6 whatever it carries.
func (IP6GRE) UnderlayFamily(string) string { return method.IPv6 }

// Options declares the scenario options (see Option).
func (IP6GRE) Options() []method.Option { return nil }

func (IP6GRE) Requirements() []method.Requirement {
	return []method.Requirement{{Kernel: "CONFIG_IPV6_GRE", Module: "ip6_gre"}}
}

// Scale: one tunnel is an ip6gre device with its own GRE key (tunnel i's
// is 1 + i; the measured one keeps none), all between the same underlay
// addresses; the address plan bounds them.
func (IP6GRE) Scale(family string, _ method.Values) method.Scale {
	return keyedScale("ip6gre", family, 0)
}

// Setup creates env.N() ip6gre devices per side between the IPv6
// underlay addresses (one: the measured tunnel's, without key), with the
// overlay addresses of the measured family on them.
func (m IP6GRE) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		return nil, err
	}
	if err := checkTunnels(m, env, m.Scale(env.Family, opts)); err != nil {
		return nil, err
	}
	return setupTunnels(env, ip6greSet(), ip6greTunnel(0))
}

// ip6greTunnel is an ip6gre device with GRE key key (0: none).
func ip6greTunnel(key uint32) kernelTunnel {
	return kernelTunnel{
		kind:      "ip6gre",
		suffix:    ip6greSuffix,
		underlay:  method.IPv6,
		config:    "CONFIG_IPV6_GRE",
		ip6greKey: key,
	}
}

// Teardown deletes every ip6gre device on both sides.
func (IP6GRE) Teardown(_ context.Context, env *method.Env) error {
	return teardownTunnels(env, ip6greSet())
}
