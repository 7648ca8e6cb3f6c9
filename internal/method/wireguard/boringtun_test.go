package wireguard_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/method/wireguard"
)

// The boringtun tests skip, with the install line, where boringtun-cli is
// not installed: the method is optional.

func TestBoringTun(t *testing.T) {
	m := wireguard.NewBoringTun()
	requireProgram(t, m, "boringtun-cli")
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) {
			runWireGuard(t, m, family, nil, func(r *wgRun) { wgShow(t, r); wgRekeyCheck(t, m, r) })
		})
	}
}

func TestBoringTunWire(t *testing.T) {
	m := wireguard.NewBoringTun()
	requireProgram(t, m, "boringtun-cli")
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) { wireGuardWire(t, m, family) })
	}
}

func TestBoringTunHandshakeFailure(t *testing.T) {
	m := wireguard.NewBoringTun()
	requireProgram(t, m, "boringtun-cli")
	wgHandshakeFailure(t, m)
}

func TestBoringTunJumboAtOnce(t *testing.T) {
	m := wireguard.NewBoringTun()
	requireProgram(t, m, "boringtun-cli")
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) { wgJumboAtOnce(t, m, family) })
	}
}
