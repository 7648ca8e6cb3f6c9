// Package ebpf is tunbench's own tunnel data path: a tc egress program that
// encapsulates (Geneve, VXLAN, GRE, IPIP) by rule and a tc ingress program
// that decapsulates, written in C beside this file (tunnel.c, tunnel.h) and
// loaded with cilium/ebpf.
//
// One attachment per endpoint serves every remote site. A rule maps an
// inner destination prefix to the remote's underlay address, the
// encapsulation, the VNI or key and the outer source-port policy; adding a
// site is a map update (Table.Put), not a new device. Every rule and decap
// entry counts packets, bytes and drops by reason.
//
// The bpf2go output (tunnel_bpfel.go, tunnel_bpfel.o) is committed, so a
// plain go build needs no clang; TestGeneratedUpToDate fails when it is
// stale. Regenerate with "go generate ./internal/ebpf/" (needs clang and
// libbpf-dev).
package ebpf

//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" -target bpfel -type rule_key -type rule -type decap_key -type decap -type config -type counters tunnel tunnel.c
