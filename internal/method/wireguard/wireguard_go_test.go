package wireguard_test

import (
	"os/exec"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/wireguard"
	"github.com/tunbench/tunbench/internal/testenv"
)

// requireProgram skips t, with the install instruction, when the method's
// program is missing.
func requireProgram(t testing.TB, m method.Method, program string) {
	t.Helper()
	for _, r := range m.Requirements() {
		if r.Program == program {
			if _, err := exec.LookPath(program); err != nil {
				testenv.SkipMissing(t, "%s not installed: %s", program, r.Fix())
			}
			return
		}
	}
	t.Fatalf("%s does not require %s", m.Name(), program)
}

func TestWireGuardGo(t *testing.T) {
	m := wireguard.NewWireGuardGo()
	requireProgram(t, m, "wireguard-go")
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) {
			runWireGuard(t, m, family, nil, func(r *wgRun) { wgShow(t, r); wgRekeyCheck(t, m, r) })
		})
	}
}

func TestWireGuardGoWire(t *testing.T) {
	m := wireguard.NewWireGuardGo()
	requireProgram(t, m, "wireguard-go")
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) { wireGuardWire(t, m, family) })
	}
}

func TestWireGuardGoHandshakeFailure(t *testing.T) {
	m := wireguard.NewWireGuardGo()
	requireProgram(t, m, "wireguard-go")
	wgHandshakeFailure(t, m)
}

func TestWireGuardGoJumboAtOnce(t *testing.T) {
	m := wireguard.NewWireGuardGo()
	requireProgram(t, m, "wireguard-go")
	for _, family := range m.Families() {
		t.Run(family, func(t *testing.T) { wgJumboAtOnce(t, m, family) })
	}
}
