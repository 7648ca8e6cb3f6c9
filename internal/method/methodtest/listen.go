package methodtest

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
)

// Sockets returns the listening sockets of ep's network namespace (TCP in
// state LISTEN, unconnected UDP), read from /proc/net/{tcp,tcp6,udp,udp6}
// by a process in that namespace.
func Sockets(t testing.TB, ep *testbed.Endpoint) []method.Socket {
	t.Helper()
	var out []method.Socket
	for _, f := range []string{"tcp", "tcp6", "udp", "udp6"} {
		data, err := ep.Run(context.Background(), "cat", "/proc/net/"+f)
		if err != nil {
			t.Fatalf("%s: read /proc/net/%s: %v\n%s", ep.Side, f, err, data)
		}
		s, err := method.ParseSockets(data, strings.TrimSuffix(f, "6"))
		if err != nil {
			t.Fatalf("%s: %v", ep.Side, err)
		}
		out = append(out, s...)
	}
	return out
}

// CheckListeners compares, while m is set up with env and path, the
// sockets open in each endpoint's namespace with those m declares
// (method.Listener): every open socket must be one declared for that
// side, at the declared address (so no wildcard socket where m declares
// one bound to the underlay), and every declared socket with a fixed port
// must be open. ignore, when set, leaves out the sockets the test itself
// opened (its load servers). A method that declares nothing is not
// checked.
func CheckListeners(t testing.TB, m method.Method, env *method.Env, path *method.Path, ignore func(method.Socket) bool) {
	t.Helper()
	opts, err := method.ParseOptions(m, env.Options)
	if err != nil {
		t.Fatalf("%s options: %v", m.Name(), err)
	}
	decl, ok := method.ListensOf(m, opts, env.Family)
	if !ok {
		return
	}
	uf := method.UnderlayFamily(m, env.Family)
	for _, ep := range env.Endpoints() {
		var over netip.Addr
		if path != nil {
			over = path.A
			if ep == env.B {
				over = path.B
			}
		}
		under := ep.Addr(uf)
		open := Sockets(t, ep)
		t.Logf("%s %s: side %s listens on %v", m.Name(), env.Family, ep.Side, open)
		for _, s := range open {
			if ignore != nil && ignore(s) {
				continue
			}
			found := false
			for _, l := range decl {
				if l.OnSide(ep.Side) && l.Matches(s, under, over) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s %s: side %s has %s open, which the method does not declare (declared: %s)", m.Name(), env.Family, ep.Side, s, listenLines(decl, ep.Side))
			}
		}
		for _, l := range decl {
			if !l.OnSide(ep.Side) || l.Port == 0 {
				continue
			}
			found := false
			for _, s := range open {
				if l.Matches(s, under, over) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s %s: side %s declares %s %d on %s (%s), but no such socket is open; open: %v", m.Name(), env.Family, ep.Side, l.Proto, l.Port, l.Addr, l.Program, open)
			}
		}
	}
}

func listenLines(decl []method.Listen, side string) string {
	var lines []string
	for _, l := range decl {
		if l.OnSide(side) {
			lines = append(lines, l.Proto+" "+portString(l.Port)+" on "+l.Addr+" ("+l.Program+")")
		}
	}
	if lines == nil {
		return "none"
	}
	return strings.Join(lines, "; ")
}

func portString(p int) string {
	if p == 0 {
		return "any port"
	}
	return strconv.Itoa(p)
}
