package method

// Builtin returns a registry of every method tunbench implements.
func Builtin() *Registry {
	return NewRegistry(
		Native{},
		VXLAN{},
		SRv6{},
		Geneve{},
		GRE{},
		Gretap{},
		IPIP{},
		IP6IP6{},
		IP6GRE{},
		WireGuard{},
		NewWireGuardGo(),
		NewBoringTun(),
		NewOpenVPN(),
		NewOVSVXLAN(),
		NewOVSGeneve(),
		NewOVSGRE(),
		NewIPsec(),
		NewIPsecECMP(),
		EBPFGeneve,
		EBPFVXLAN,
		EBPFGRE,
		EBPFIPIP,
	)
}
