// Package wireguard is the WireGuard methods: the kernel's wireguard
// (configured through wgctrl), and the userspace wireguard-go and
// boringtun (configured through their UAPI socket), one device per side
// with keys made for the run.
package wireguard
