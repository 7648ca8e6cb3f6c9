package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/testenv"
)

// These tests run the real tools with the argv the builders produce, in two
// throwaway namespaces, and parse what they print: the builders and parsers
// agree with the installed iperf3 and sockperf, not only with testdata/.

// nsPair is two namespaces joined by a veth pair: a (198.18.0.1,
// 2001:2::1) and b (198.18.0.2, 2001:2::2).
type nsPair struct{ a, b string }

func newNSPair(t *testing.T) nsPair {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real load tools for a few seconds; skipped with -short")
	}
	for _, bin := range []string{"ip", "ss", "iperf3", "sockperf"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.SkipMissing(t, "%s is not installed: %v", bin, err)
		}
	}
	p := nsPair{
		a: fmt.Sprintf("tbtest-load-%d-a", os.Getpid()),
		b: fmt.Sprintf("tbtest-load-%d-b", os.Getpid()),
	}
	if out, err := exec.Command("ip", "netns", "add", p.a).CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("Operation not permitted")) || bytes.Contains(out, []byte("Permission denied")) {
			testenv.SkipMissing(t, "creating a network namespace needs CAP_SYS_ADMIN: ip netns add: %s", bytes.TrimSpace(out))
		}
		t.Fatalf("ip netns add %s: %v: %s", p.a, err, out)
	}
	t.Cleanup(func() { ipCmd(t, "netns", "del", p.a) })
	ipCmd(t, "netns", "add", p.b)
	t.Cleanup(func() { ipCmd(t, "netns", "del", p.b) })
	ipCmd(t, "link", "add", "va", "netns", p.a, "type", "veth", "peer", "name", "vb", "netns", p.b)
	ipCmd(t, "-n", p.a, "addr", "add", "198.18.0.1/24", "dev", "va")
	ipCmd(t, "-n", p.b, "addr", "add", "198.18.0.2/24", "dev", "vb")
	ipCmd(t, "-n", p.a, "addr", "add", "2001:2::1/64", "dev", "va", "nodad")
	ipCmd(t, "-n", p.b, "addr", "add", "2001:2::2/64", "dev", "vb", "nodad")
	for _, l := range [][2]string{{p.a, "lo"}, {p.b, "lo"}, {p.a, "va"}, {p.b, "vb"}} {
		ipCmd(t, "-n", l[0], "link", "set", l[1], "up")
	}
	return p
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// inNS returns argv run inside namespace ns with LC_ALL=C.
func inNS(ctx context.Context, ns string, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// startServer starts argv in ns, waits until TCP port listens there and
// stops the server (if still running) at cleanup.
func startServer(t *testing.T, ns string, argv []string, port int) *exec.Cmd {
	t.Helper()
	cmd := inNS(context.Background(), ns, argv)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", argv, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := inNS(context.Background(), ns, []string{"ss", "-Hltn", fmt.Sprintf("sport = :%d", port)}).Output()
		if err == nil && len(bytes.TrimSpace(out)) > 0 {
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q: nothing listens on port %d after 5s", argv, port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runClient runs argv in ns and returns its stdout.
func runClient(t *testing.T, ns string, argv []string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := inNS(ctx, ns, argv)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%q: %v: %s%s", argv, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

func TestIperf3RealRun(t *testing.T) {
	p := newNSPair(t)
	for _, tc := range []struct{ name, server string }{{"ipv4", "198.18.0.2"}, {"ipv6", "2001:2::2"}} {
		t.Run(tc.name, func(t *testing.T) {
			addr := netip.MustParseAddr(tc.server)
			srv := Iperf3Server{Bind: addr, Port: 5201}
			startServer(t, p.b, srv.Args(), 5201)
			cli := Iperf3Client{Server: addr, Port: 5201, Duration: time.Second}
			if err := cli.Validate(); err != nil {
				t.Fatal(err)
			}
			got, err := ParseIperf3(runClient(t, p.a, cli.Args()))
			if err != nil {
				t.Fatalf("ParseIperf3: %v", err)
			}
			if got.BitsPerSecond <= 0 || got.Bytes <= 0 || len(got.Intervals) == 0 || got.Version != "3.12" {
				t.Errorf("implausible result of a 1 s run: %+v", got)
			}
		})
	}
	t.Run("no server", func(t *testing.T) {
		cli := Iperf3Client{Server: netip.MustParseAddr("198.18.0.2"), Port: 5299, Duration: time.Second}
		_, err := ParseIperf3(runClient(t, p.a, cli.Args()))
		var te *ToolError
		if !errors.As(err, &te) || !strings.Contains(te.Message, "Connection refused") {
			t.Errorf("err = %v, want *ToolError about the refused connection", err)
		}
	})
}

func TestSockperfRealRun(t *testing.T) {
	p := newNSPair(t)
	addr := netip.MustParseAddr("198.18.0.2")
	srv := SockperfServer{Addr: addr, Port: 11111}
	startServer(t, p.b, srv.Args(), 11111)
	logFile := filepath.Join(t.TempDir(), "full.csv")
	cli := SockperfClient{Server: addr, Port: 11111, Duration: time.Second, FullLog: logFile}
	if err := cli.Validate(); err != nil {
		t.Fatal(err)
	}
	summary := runClient(t, p.a, cli.Args())
	fullLog, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseSockperf(summary, fullLog)
	if err != nil {
		t.Fatalf("ParseSockperf: %v\n%s", err, summary)
	}
	// ParseSockperf already checks the full log against the summary.
	if got.Samples < 100 || got.Min <= 0 || got.P50 < got.Min || got.Max < got.P99 || len(got.CDF) != 104 {
		t.Errorf("implausible result of a 1 s ping-pong: %+v", got)
	}
}
