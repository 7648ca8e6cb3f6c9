// Package registry holds the single list of the methods tunbench
// implements, from every family package of internal/method.
package registry

import (
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ebpftun"
	"github.com/tunbench/tunbench/internal/method/ipsec"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/l2tp"
	"github.com/tunbench/tunbench/internal/method/macsec"
	"github.com/tunbench/tunbench/internal/method/nebula"
	"github.com/tunbench/tunbench/internal/method/openvpn"
	"github.com/tunbench/tunbench/internal/method/ovs"
	"github.com/tunbench/tunbench/internal/method/podnet"
	"github.com/tunbench/tunbench/internal/method/sshtunnel"
	"github.com/tunbench/tunbench/internal/method/tailscale"
	"github.com/tunbench/tunbench/internal/method/wireguard"
)

// Builtin returns a registry of every method tunbench implements.
func Builtin() *method.Registry {
	return method.NewRegistry(
		method.Native{},
		kernel.VXLAN{},
		kernel.SRv6{},
		kernel.Geneve{},
		kernel.GRE{},
		kernel.Gretap{},
		kernel.IPIP{},
		kernel.IP6IP6{},
		kernel.IP6GRE{},
		wireguard.WireGuard{},
		wireguard.NewWireGuardGo(),
		wireguard.NewBoringTun(),
		nebula.New(),
		openvpn.NewOpenVPN(),
		ovs.NewOVSVXLAN(),
		ovs.NewOVSGeneve(),
		ovs.NewOVSGRE(),
		ipsec.NewIPsec(),
		ipsec.NewIPsecECMP(),
		ebpftun.EBPFGeneve,
		ebpftun.EBPFVXLAN,
		ebpftun.EBPFGRE,
		ebpftun.EBPFIPIP,
		podnet.PodNetwork{},
		tailscale.New(),
		sshtunnel.New(),
		l2tp.L2TPv3{},
		macsec.MACsec{},
	)
}
