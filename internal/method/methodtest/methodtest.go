// Package methodtest runs a method for real in a fresh local testbed, for
// the integration tests of every method: set up, carry traffic, tear down,
// and check that the namespaces are as they were. Record runs one on two
// recording endpoints instead, for the golden tests of its set-up.
package methodtest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// Setup builds a testbed with the given underlay MTU and sets m up on it,
// then checks the sockets open in both namespaces against those m
// declares (CheckListeners). Teardown runs in t.Cleanup and must succeed (twice) and leave the links
// of both namespaces as they were before Setup.
func Setup(t testing.TB, m method.Method, family string, mtu int, opts map[string]string) (*localns.Local, *method.Env, *method.Path) {
	t.Helper()
	return SetupFaults(t, m, family, mtu, opts, nil)
}

// SetupFaults is Setup with faults injected into the set-up (Env.Faults).
func SetupFaults(t testing.TB, m method.Method, family string, mtu int, opts map[string]string, faults *method.Faults) (*localns.Local, *method.Env, *method.Path) {
	t.Helper()
	l, env, path := setup(t, m, family, mtu, opts, faults, 0)
	// Nothing but the method runs in the namespaces yet: every socket open
	// there is the method's, and must be one it declares.
	CheckListeners(t, m, env, path, nil)
	return l, env, path
}

// setup builds a testbed, sets m up on it with faults and tunnels
// tunnels (0: the single one), and in t.Cleanup tears it down twice and
// checks that the links of both namespaces are as they were before.
func setup(t testing.TB, m method.Method, family string, mtu int, opts map[string]string, faults *method.Faults, tunnels int) (*localns.Local, *method.Env, *method.Path) {
	t.Helper()
	l := testbedtest.New(t, mtu)
	env := &method.Env{
		A: l.A, B: l.B, Family: family, UnderlayMTU: mtu,
		OverlayMTU: mtu - m.Overhead(family),
		Prefix:     testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: opts, Faults: faults, Tunnels: tunnels,
	}
	with := ""
	if tunnels > 0 {
		with = fmt.Sprintf(" with %d tunnels", tunnels)
	}
	before := [][]string{LinkState(t, l.A), LinkState(t, l.B)}
	ctx := context.Background()
	path, err := m.Setup(ctx, env)
	t.Cleanup(func() {
		if err := m.Teardown(ctx, env); err != nil {
			t.Errorf("%s Teardown: %v", m.Name(), err)
		}
		if err := m.Teardown(ctx, env); err != nil {
			t.Errorf("%s second Teardown: %v", m.Name(), err)
		}
		after := [][]string{LinkState(t, l.A), LinkState(t, l.B)}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("links after %s teardown%s (-before +after):\n%s", m.Name(), with, diff)
		}
	})
	if err != nil {
		t.Fatalf("%s Setup%s: %v", m.Name(), with, err)
	}
	return l, env, path
}

// LinkState lists the links of a namespace as "name type" lines.
func LinkState(t testing.TB, ep *testbed.Endpoint) []string {
	t.Helper()
	links, err := ep.NL.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range links {
		lines = append(lines, l.Attrs().Name+" "+l.Type())
	}
	return lines
}

// Iperf3 sends seconds of one TCP stream from path.A to path.B and returns
// iperf3's JSON output. It fails the test when no data arrived.
func Iperf3(t testing.TB, l *localns.Local, path *method.Path, seconds int) []byte {
	t.Helper()
	return Iperf3Streams(t, l, path, seconds, 1)
}

// Iperf3Streams is Iperf3 with streams parallel TCP flows (iperf3 -P).
func Iperf3Streams(t testing.TB, l *localns.Local, path *method.Path, seconds, streams int) []byte {
	t.Helper()
	return Iperf3Between(t, l.A, l.B, path, seconds, streams)
}

// serverStart bounds the wait for a test's load server to listen: it
// returns as soon as the server does, and a server in the kernel lab's
// emulated guest beside a loaded host took more than 5 s to (TestLabGUE
// failed so).
const serverStart = 30 * time.Second

// Iperf3Between is Iperf3Streams between endpoints a and b, wherever they
// are (on a remote host, the client and server run there).
func Iperf3Between(t testing.TB, a, b *testbed.Endpoint, path *method.Path, seconds, streams int) []byte {
	t.Helper()
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	ctx := context.Background()
	srv := b.Command(ctx, "iperf3", "-s", "-1", "-B", path.B.String(), "-p", "5201")
	if err := b.Start(srv); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = srv.Kill()
		_ = srv.Wait()
		b.Forget(srv)
	}()
	if err := b.WaitListening(ctx, srv.Pid(), 5201, serverStart); err != nil {
		t.Fatalf("iperf3 server: %v", err)
	}
	out, err := a.Run(ctx, "iperf3", "-c", path.B.String(), "-p", "5201", "-t", strconv.Itoa(max(seconds, 1)), "-P", strconv.Itoa(max(streams, 1)), "-J")
	if err != nil {
		t.Fatalf("iperf3 from %s to %s: %v", path.A, path.B, err)
	}
	if !strings.Contains(string(out), `"sum_received"`) {
		t.Fatalf("iperf3 output has no sum_received:\n%s", out)
	}
	return out
}

// Ping checks that path.B answers ICMP echo from path.A.
func Ping(t *testing.T, l *localns.Local, path *method.Path) {
	t.Helper()
	// Two answers, in up to three tries of 5 s: on a loaded machine the
	// first echoes can wait out neighbour discovery over a fresh overlay
	// and fail with it (a clean-clone run at load average 20 lost both of
	// ebpf-vxlan's over IPv6 with -c 2 -W 3; another got "Address
	// unreachable" for all twelve of one -w 10 ping, which counts such
	// errors toward -c and gave up after 3 s). A neighbour entry that
	// failed is resolved afresh by the next try.
	var tries []string
	for range 3 {
		out, err := l.A.Run(context.Background(), "ping", "-c", "2", "-i", "0.2", "-w", "5", "-W", "3", path.B.String())
		if err == nil {
			return
		}
		tries = append(tries, fmt.Sprintf("%v\n%s", err, out))
	}
	t.Fatalf("ping %s from a, three tries:\n%s", path.B, strings.Join(tries, "\n"))
}

// InLab reports whether the test runs inside the kernel-lab VM.
func InLab() bool { return os.Getenv("TUNBENCH_IN_LAB") == "1" }

// PingFullSize sends one echo request that exactly fills the overlay MTU,
// with don't-fragment set, and one byte more, which must be refused: the
// overlay MTU the method claims is the one the path really has.
func PingFullSize(t *testing.T, l *localns.Local, env *method.Env, path *method.Path) {
	t.Helper()
	PingFullSizeFrom(t, l.A, env, path)
}

// PingFullSizeFrom is PingFullSize from endpoint a, wherever it is.
func PingFullSizeFrom(t *testing.T, a *testbed.Endpoint, env *method.Env, path *method.Path) {
	t.Helper()
	size := env.OverlayMTU - 20 - 8
	if path.B.Is6() {
		size = env.OverlayMTU - 40 - 8
	}
	ctx := context.Background()
	out, err := a.Run(ctx, "ping", "-c", "1", "-M", "do", "-s", strconv.Itoa(size), "-W", "3", path.B.String())
	if err != nil {
		t.Fatalf("ping of %d bytes (overlay MTU %d) from %s: %v\n%s", size, env.OverlayMTU, a.Side, err, out)
	}
	if out, err := a.Run(ctx, "ping", "-c", "1", "-M", "do", "-s", strconv.Itoa(size+1), "-W", "1", path.B.String()); err == nil {
		t.Errorf("ping of %d bytes passed an overlay MTU of %d:\n%s", size+1, env.OverlayMTU, out)
	}
}

// Gbps returns the receiver's rate, in Gbit/s, from iperf3's JSON output.
func Gbps(t testing.TB, out []byte) float64 {
	t.Helper()
	thr, err := load.ParseIperf3(out)
	if err != nil {
		t.Fatalf("iperf3 output: %v", err)
	}
	return thr.BitsPerSecond / 1e9
}

// NoSecrets fails t when text contains one of secrets; where says what
// text is (it is never printed, since it holds the secret).
func NoSecrets(t *testing.T, where, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("key material in %s", where)
			return
		}
	}
}

// NoSecretsInFiles checks every regular file under root, except those
// keyFile accepts (the key and certificate files themselves), for secrets.
func NoSecretsInFiles(t *testing.T, root string, secrets []string, keyFile func(name string) bool) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || keyFile(d.Name()) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		NoSecrets(t, path, string(data), secrets)
		return nil
	})
	if err != nil {
		t.Errorf("scan %s: %v", root, err)
	}
}

// DeviceMTU checks that every device of path other than the underlay has
// the given MTU on both sides.
func DeviceMTU(t *testing.T, l *localns.Local, path *method.Path, mtu int) {
	t.Helper()
	DeviceMTUOn(t, l.Endpoints(), path, mtu)
}

// DeviceMTUOn is DeviceMTU on the given endpoints, wherever they are.
func DeviceMTUOn(t *testing.T, eps []*testbed.Endpoint, path *method.Path, mtu int) {
	t.Helper()
	for _, ep := range eps {
		for _, d := range path.Devices[ep.Side] {
			if d == ep.Dev {
				continue
			}
			link, err := ep.NL.LinkByName(d)
			if err != nil {
				t.Fatalf("%s: device %s: %v", ep.Side, d, err)
			}
			if link.Attrs().MTU != mtu {
				t.Errorf("%s: %s MTU = %d, want %d", ep.Side, d, link.Attrs().MTU, mtu)
			}
		}
	}
}
