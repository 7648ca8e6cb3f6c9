// Package wireguard is the WireGuard methods: the kernel's wireguard
// (configured through wgctrl), and the userspace wireguard-go and
// boringtun (configured through their UAPI socket), one device per side
// with keys made for the run. One tunnel of the tunnels dimension is one
// peer: side a's device holds N of them (scale.go).
package wireguard
