package runner

import (
	"context"
	"net/netip"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// TestEchoListensOnTheTunnelAddress: the echo servers of the connect
// test (started ahead, before the address exists, told it after the
// set-up) and of the recover test (started after it) listen on b's
// address only, never on 0.0.0.0 or ::, and the one started ahead has
// no socket at all until it is told the address.
func TestEchoListensOnTheTunnelAddress(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	bin := filepath.Join(t.TempDir(), "tunbench")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/tunbench").CombinedOutput(); err != nil {
		t.Fatalf("build tunbench: %v\n%s", err, out)
	}
	l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), MTU: 1500, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pair := l.Pair()
	pair.A.Exe, pair.B.Exe = bin, bin
	ctx := context.Background()
	for _, family := range []string{method.IPv4, method.IPv6} {
		addr := pair.B.Addr(family)
		want := []string{method.Socket{Proto: "udp", Local: netip.AddrPortFrom(addr, echoPort)}.String()}

		ahead, err := startEchoAhead(ctx, pair.B)
		if err != nil {
			t.Fatal(err)
		}
		if got := socketStrings(methodtest.Sockets(t, pair.B)); len(got) != 0 {
			t.Errorf("%s: echo started ahead listens on %v before it is told the address", family, got)
		}
		if err := ahead.listen(ctx, addr); err != nil {
			ahead.stop()
			t.Fatal(err)
		}
		got := socketStrings(methodtest.Sockets(t, pair.B))
		ahead.stop()
		if len(got) != 1 || got[0] != want[0] {
			t.Errorf("%s: echo started ahead listens on %v, want %v", family, got, want)
		}

		e, err := startEcho(ctx, pair.B, addr)
		if err != nil {
			t.Fatal(err)
		}
		got = socketStrings(methodtest.Sockets(t, pair.B))
		e.stop()
		if len(got) != 1 || got[0] != want[0] {
			t.Errorf("%s: echo listens on %v, want %v", family, got, want)
		}
	}
}

func socketStrings(ss []method.Socket) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.String())
	}
	return out
}
