package method

import (
	"context"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// IPIP is the kernel's IPv4-in-IPv4 tunnel (RFC 2003): IPv4 traffic over
// the IPv4 underlay.
//
// Options: none.
type IPIP struct{}

const ipipSuffix = "-ipip"

func (IPIP) Name() string           { return "ipip" }
func (IPIP) Implementation() string { return "kernel ipip (netlink)" }
func (IPIP) Families() []string     { return []string{IPv4} }

// Overhead is the outer IPv4 header (20).
func (IPIP) Overhead(string) int { return 20 }

// Options declares the scenario options (see Option).
func (IPIP) Options() []Option { return nil }

func (IPIP) Requirements() []Requirement { return []Requirement{{Kernel: "CONFIG_NET_IPIP"}} }

// Setup creates one ipip device per side with the overlay address on it.
func (m IPIP) Setup(_ context.Context, env *Env) (*Path, error) {
	if _, err := ParseOptions(m, env.Options); err != nil {
		return nil, err
	}
	if env.Family != IPv4 {
		return nil, unsupportedFamily(m, env.Family)
	}
	return setupTunnel(env, kernelTunnel{
		kind:     "ipip",
		suffix:   ipipSuffix,
		underlay: IPv4,
		config:   "CONFIG_NET_IPIP",
		create: linkAdd(func(name string, local, remote net.IP) netlink.Link {
			return &netlink.Iptun{
				LinkAttrs: netlink.LinkAttrs{Name: name},
				Local:     local,
				Remote:    remote,
				Ttl:       tunnelTTL,
				PMtuDisc:  1,
				Proto:     unix.IPPROTO_IPIP,
			}
		}),
	})
}

// Teardown deletes both ipip devices.
func (IPIP) Teardown(_ context.Context, env *Env) error { return teardownTunnel(env, ipipSuffix) }
