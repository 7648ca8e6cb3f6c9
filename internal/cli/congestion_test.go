package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
)

const ccSysctl = "/proc/sys/net/ipv4/tcp_congestion_control"

// sysctlIn reads the congestion control default of namespace ns ("" for
// this process's own).
func sysctlIn(t *testing.T, ns string) string {
	t.Helper()
	if ns == "" {
		data, err := os.ReadFile(ccSysctl)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", ccSysctl).Output()
	if err != nil {
		t.Fatalf("read %s in %s: %v", ccSysctl, ns, err)
	}
	return strings.TrimSpace(string(out))
}

// wantCongestionCells checks that cells hold n ok cells per algorithm
// of ccs, each recording the algorithm its connections' sockets reported
// (iperf3's sender and receiver, the rr tool's client) equal to the one
// asked for.
func wantCongestionCells(t *testing.T, cells []result.Cell, n int, ccs ...string) {
	t.Helper()
	got := map[string]int{}
	for _, c := range cells {
		if c.Status != result.StatusOK {
			t.Errorf("%s: %s: %s", c.Key, c.Status, c.Error)
			continue
		}
		asked := c.Params.CongestionControl
		used := []string{c.Meta.CongestionControl}
		if c.Throughput != nil {
			used = append(used, c.Throughput.SenderCongestion, c.Throughput.ReceiverCongestion)
		}
		if c.Latency != nil {
			used = append(used, c.Latency.Congestion)
		}
		for _, u := range used {
			if u != asked {
				t.Errorf("%s: asked %q, a connection reported %q (all: %q)", c.Key, asked, u, used)
			}
		}
		if !strings.Contains(c.Key, "/cc-"+asked) {
			t.Errorf("cell key %s lacks cc-%s", c.Key, asked)
		}
		got[asked]++
	}
	for _, cc := range ccs {
		if got[cc] != n {
			t.Errorf("%d ok cells with %s, want %d", got[cc], cc, n)
		}
	}
}

// TestCongestionControlLocal: congestion_control [cubic, bbr] on the local
// testbed gives a cell per algorithm whose connections used it, read from
// their sockets, and the host's own setting is the same afterwards.
func TestCongestionControlLocal(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	before := sysctlIn(t, "")
	dir := t.TempDir()
	export := filepath.Join(dir, "run.json")
	scen := filepath.Join(dir, "cc.yaml")
	if err := os.WriteFile(scen, []byte("methods: [native]\ncongestion_control: [cubic, bbr]\nrepetitions: 1\nduration: 2s\nomit: 0s\nlatency: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "run", "-f", scen, "--db", filepath.Join(dir, "r.db"), "--export", export, "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run: %v\n%s", err, out)
	}
	wantCongestionCells(t, exportOf(t, export).Cells, 1, "cubic", "bbr")
	for _, want := range []string{"-- cc cubic", "-- cc bbr"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if after := sysctlIn(t, ""); after != before {
		t.Errorf("the host's %s went from %s to %s", ccSysctl, before, after)
	}
}

// TestCongestionControlDefaultIsCubic: the default run measures with
// cubic whatever the host's own default, and says so under the table.
func TestCongestionControlDefaultIsCubic(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	dir := t.TempDir()
	export := filepath.Join(dir, "run.json")
	out, err := exec.Command(bin, "run", "--methods", "native", "--reps", "1", "--duration", "1s", "--omit", "0s", "--latency", "1s",
		"--db", filepath.Join(dir, "r.db"), "--export", export, "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run: %v\n%s", err, out)
	}
	wantCongestionCells(t, exportOf(t, export).Cells, 1, "cubic")
	if !strings.Contains(string(out), "TCP congestion control: cubic") || strings.Contains(string(out), "paces its own sending") {
		t.Errorf("the default run does not say cubic, or warns of BBR's pacing:\n%s", out)
	}
}

// TestCongestionControlUnknownRefused: an algorithm this machine does not
// offer is refused before anything is created, naming those it offers.
func TestCongestionControlUnknownRefused(t *testing.T) {
	avail, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if err != nil {
		t.Skipf("no congestion control list to read: %v", err)
	}
	want := []string{"congestion_control: this host does not offer nosuchcc", "it offers"}
	want = append(want, strings.Fields(string(avail))...)
	refused(t, []string{"run", "--methods", "native", "--cc", "cubic,nosuchcc"}, want...)
}

// TestCongestionControlSSH: the same two algorithms between two sshtest
// hosts, set per connection: every cell used what it asked for, and each
// host's own default is unchanged.
func TestCongestionControlSSH(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	var before []string
	for _, st := range sites.Site {
		before = append(before, sysctlIn(t, st.Namespace))
	}
	scen := sshYAML(t, sites, bin, sites.KnownHosts, "1s", "tests: [tcp_stream, tcp_rr]\ncongestion_control: [cubic, bbr]\n")
	dir := t.TempDir()
	db, export := filepath.Join(dir, "r.db"), filepath.Join(dir, "run.json")
	out, err := inSite(sites, bin, "run", "-f", scen, "--methods", "native", "--db", db, "--export", export, "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run on testbed ssh: %v\n%s", err, out)
	}
	wantCongestionCells(t, exportOf(t, export).Cells, 2, "cubic", "bbr") // two ordered pairs each
	for i, st := range sites.Site {
		if after := sysctlIn(t, st.Namespace); after != before[i] {
			t.Errorf("site %s: %s went from %s to %s", st.Config.Name, ccSysctl, before[i], after)
		}
	}
	noSSHLeftovers(t, sites, db)
}

// TestCongestionControlSSHRefused: an algorithm a host does not offer is
// refused for that host before anything is created on any.
func TestCongestionControlSSHRefused(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	sites := sshtest.New(t, 2)
	scen := sshYAML(t, sites, bin, sites.KnownHosts, "1s", "congestion_control: [nosuchcc]\n")
	db := filepath.Join(t.TempDir(), "r.db")
	out, err := inSite(sites, bin, "run", "-f", scen, "--db", db).CombinedOutput()
	if err == nil {
		t.Fatalf("a run with an algorithm no host offers succeeded:\n%s", out)
	}
	for _, want := range []string{"host " + siteName(sites, 0) + " does not offer nosuchcc", "host " + siteName(sites, 1) + " does not offer nosuchcc", "it offers"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error lacks %q:\n%s", want, out)
		}
	}
	noSSHLeftovers(t, sites, db)
}
