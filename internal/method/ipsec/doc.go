// Package ipsec is the ipsec methods: strongSwan's charon on each side,
// driven with swanctl (IKEv2, pre-shared keys made for the run), with the
// kernel's ESP where the kernel has it and strongSwan's userspace
// libipsec where it does not, and ipsec-ecmp, several tunnels behind an
// equal-cost multipath route (seed 003).
package ipsec
