package ssh_test

import (
	"context"
	"errors"
	"fmt"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/bed/ssh"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/remotehost"
	"github.com/tunbench/tunbench/internal/remotehost/sshtest"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testenv"
)

var (
	buildOnce sync.Once
	binPath   string
	buildID   string
	buildErr  error
)

// tunbench builds the binary the hosts run (their agent and load tools)
// and returns its path and build identity.
func tunbench(t testing.TB) (string, string) {
	t.Helper()
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tunbench-agentbed-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "tunbench")
		if out, err := exec.Command("go", "build", "-o", binPath, "../../../cmd/tunbench").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%v\n%s", err, out)
			return
		}
		out, err := exec.Command(binPath, "version", "--build-id").Output()
		buildErr, buildID = err, strings.TrimSpace(string(out))
	})
	if buildErr != nil {
		t.Fatalf("build tunbench: %v", buildErr)
	}
	return binPath, buildID
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// sshScenario is a scenario over the test's sites.
func sshScenario(sites *sshtest.Sites, bin string, methods ...string) scenario.Scenario {
	s := scenario.Default()
	s.Testbed = "ssh"
	s.Methods = methods
	s.Repetitions = 1
	s.Duration, s.Omit, s.Latency = "2s", "0s", "1s"
	x := &ssh.Section{KnownHosts: sites.KnownHosts, Binary: bin}
	for _, st := range sites.Site {
		x.Sites = append(x.Sites, ssh.Site{Name: st.Config.Name, Address: st.Config.Addr, Port: st.Config.Port,
			Identity: sites.IdentityFile, Dev: st.Dev, IPv4: st.Addr4 + "/24", IPv6: st.Addr6 + "/64"})
	}
	return ssh.With(s, x)
}

// hostsOf is the ssh section of s.
func hostsOf(t testing.TB, s scenario.Scenario) *ssh.Section {
	t.Helper()
	x, err := ssh.FromScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// withHosts returns s with its ssh section changed by change.
func withHosts(t testing.TB, s scenario.Scenario, change func(*ssh.Section)) scenario.Scenario {
	t.Helper()
	x := hostsOf(t, s)
	change(x)
	return ssh.With(s, x)
}

// config is the testbed configuration a run of s uses, dialing each site
// from inside its namespace.
func config(t *testing.T, sites *sshtest.Sites, s scenario.Scenario, id string) ssh.Config {
	bin, bid := tunbench(t)
	ns := map[string]string{}
	for _, st := range sites.Site {
		ns[st.Config.Name] = st.Namespace
	}
	return ssh.Config{SSH: hostsOf(t, s), Families: s.Families, MTUs: s.MTUs, ID: id, BuildID: bid, Version: "devel", Binary: bin,
		Tools: []remotehost.Tool{{Program: "iperf3"}},
		Dial: func(site string) func(context.Context, string, string) (net.Conn, error) {
			return sshtest.DialIn(ns[site])
		},
		Log: func(f string, a ...any) { t.Logf(f, a...) }}
}

// dialer reaches each site from inside its namespace.
func dialer(ns map[string]string) func(string) func(context.Context, string, string) (net.Conn, error) {
	return func(site string) func(context.Context, string, string) (net.Conn, error) {
		return sshtest.DialIn(ns[site])
	}
}

// runSSH runs s on the sites and returns the stored cells.
func runSSH(t *testing.T, sites *sshtest.Sites, s scenario.Scenario, during func(*runner.Config)) ([]result.Cell, error) {
	t.Helper()
	reg := registry.Builtin()
	if err := s.Validate(testbeds.Catalog(reg)); err != nil {
		t.Fatalf("scenario: %v", err)
	}
	id := testbed.NewID()
	ctx := context.Background()
	tb, err := ssh.Open(ctx, config(t, sites, s, id))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := runner.Config{Scenario: s, Methods: reg, Store: st, Bed: tb, ID: id, Catalog: testbeds.Catalog(reg), BackgroundWindow: 100 * time.Millisecond}
	if during != nil {
		during(&cfg)
	}
	out, runErr := runner.Run(ctx, cfg)
	closeErr := tb.Close()
	noLeftovers(t, id)
	if out == nil {
		return nil, errors.Join(runErr, closeErr)
	}
	return out.Cells, errors.Join(runErr, closeErr)
}

// noLeftovers checks that no host keeps anything of run id: no run
// directory, no device named for it in any namespace.
func noLeftovers(t *testing.T, id string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(testbed.DefaultRoot, id)); err == nil {
		entries, _ := os.ReadDir(filepath.Join(testbed.DefaultRoot, id))
		t.Errorf("run directory %s left behind: %v", filepath.Join(testbed.DefaultRoot, id), entries)
	}
	out, _ := exec.Command("sh", "-c", "for n in $(ip netns list | cut -d' ' -f1); do ip -n $n -o link; done").Output()
	if strings.Contains(string(out), testbed.DevicePrefix(id)) {
		t.Errorf("devices of run %s left behind:\n%s", id, out)
	}
}

func TestSSHTwoHosts(t *testing.T) {
	sites := sshtest.New(t, 2)
	bin, _ := tunbench(t)
	s := sshScenario(sites, bin, "native", "vxlan", "wireguard-go")
	s.Tests = []string{scenario.TestTCPStream, scenario.TestTCPRR}
	cells, err := runSSH(t, sites, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 * 2; len(cells) != want {
		t.Fatalf("%d cells, want %d (3 methods × 2 ordered pairs)", len(cells), want)
	}
	for _, c := range cells {
		name := c.Method + " " + c.Params.SiteA + ">" + c.Params.SiteB
		if c.Status != result.StatusOK {
			t.Errorf("%s: %s: %s", name, c.Status, c.Error)
			continue
		}
		if c.Throughput == nil || c.Throughput.BitsPerSecond < 1e6 {
			t.Errorf("%s: throughput %+v", name, c.Throughput)
		}
		if c.Latency == nil {
			t.Errorf("%s: no latency (rr through the hosts' tunbench)", name)
		}
		if len(c.Meta.Hosts) != 2 || c.Meta.Hosts[0].Site != c.Params.SiteA || c.Meta.Hosts[0].Kernel == "" || c.Meta.Hosts[1].CPUCount == 0 {
			t.Errorf("%s: host metadata %+v, want both hosts' kernel and CPU, a first", name, c.Meta.Hosts)
		} else if n := c.Meta.Hosts[1].NIC; n == nil || n.Driver != "veth" || n.MTU != 1500 {
			t.Errorf("%s: receiver's underlay %+v, want driver veth, MTU 1500", name, n)
		}
		if c.CPU == nil || c.CPU.Split != "hosts" || len(c.CPU.Hosts) != 2 || c.CPU.Hosts[0].Host != c.Params.SiteA {
			t.Errorf("%s: cpu split %+v, want each host's own record, sender first", name, c.CPU)
		}
	}
}

func TestSSHMeshOfThree(t *testing.T) {
	sites := sshtest.New(t, 3)
	bin, _ := tunbench(t)
	s := sshScenario(sites, bin, "native", "vxlan")
	s.Tests = []string{scenario.TestTCPStream}
	s.Duration = "1s"
	cells, err := runSSH(t, sites, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cells {
		if c.Status != result.StatusOK {
			t.Errorf("%s %s>%s: %s", c.Method, c.Params.SiteA, c.Params.SiteB, c.Error)
		}
		seen[c.Method+" "+c.Params.SiteA+">"+c.Params.SiteB] = true
	}
	if len(seen) != 2*6 {
		t.Errorf("measured %d method × ordered pairs, want 12: %v", len(seen), seen)
	}
}

func TestSSHUnknownHostKeyRefused(t *testing.T) {
	sites := sshtest.New(t, 2)
	bin, _ := tunbench(t)
	s := sshScenario(sites, bin, "native")
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s = withHosts(t, s, func(x *ssh.Section) { x.KnownHosts = empty })
	_, err := ssh.Open(context.Background(), config(t, sites, s, testbed.NewID()))
	if !errors.Is(err, remotehost.ErrUnknownHostKey) || !strings.Contains(err.Error(), "ssh-keyscan") {
		t.Fatalf("got %v, want an unknown host key naming ssh-keyscan", err)
	}
}

// TestSSHLostHost kills one host's sshd (and with it the agent) in the
// middle of a cell: that cell fails, both hosts are cleaned once the
// host is back, and the other cells are kept.
func TestSSHLostHost(t *testing.T) {
	sites := sshtest.New(t, 2)
	bin, _ := tunbench(t)
	s := sshScenario(sites, bin, "native", "vxlan")
	s.Tests = []string{scenario.TestTCPStream}
	s.Duration = "4s"
	s = withHosts(t, s, func(x *ssh.Section) { x.Pairs = [][]string{{sites.Site[0].Config.Name, sites.Site[1].Config.Name}} })
	s.Repetitions = 2
	s.Order = "grouped"
	killed := make(chan struct{})
	cells, err := runSSH(t, sites, s, func(cfg *runner.Config) {
		go func() {
			// Into vxlan's first cell: native's two take ~5 s each.
			time.Sleep(12 * time.Second)
			if err := sites.Site[1].KillSSHD(); err != nil {
				t.Errorf("kill sshd: %v", err)
			}
			time.Sleep(time.Second)
			if err := sites.Site[1].RestartSSHD(); err != nil {
				t.Errorf("restart sshd: %v", err)
			}
			close(killed)
		}()
	})
	<-killed
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var failed, ok int
	for _, c := range cells {
		switch c.Status {
		case result.StatusOK:
			ok++
		case result.StatusFailed:
			failed++
			t.Logf("failed cell %s rep %d: %s", c.Key, c.Repetition, c.Error)
		}
	}
	if len(cells) != 4 || failed < 1 || ok < 2 {
		t.Errorf("cells %d, ok %d, failed %d: want 4 with the killed one failed and the rest kept", len(cells), ok, failed)
	}
}

// TestSSHOneWayDelay: UDP one-way delay between hosts is put on one clock
// by the measured offset, and says so.
func TestSSHOneWayDelay(t *testing.T) {
	sites := sshtest.New(t, 2)
	bin, _ := tunbench(t)
	s := sshScenario(sites, bin, "native")
	s.Tests = []string{scenario.TestUDPSizes}
	s.UDP.Sizes, s.UDP.Trial = []int{256}, "1s"
	s = withHosts(t, s, func(x *ssh.Section) { x.Pairs = [][]string{{sites.Site[0].Config.Name, sites.Site[1].Config.Name}} })
	cells, err := runSSH(t, sites, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 1 || cells[0].Status != result.StatusOK || len(cells[0].UDPSizes) != 1 {
		t.Fatalf("cells: %+v", cells)
	}
	tr := cells[0].UDPSizes[0].Result
	if tr == nil {
		t.Fatalf("no trial: %+v", cells[0].UDPSizes[0])
	}
	if !strings.Contains(tr.DelayNote, "corrected by the hosts' clock offset") || tr.ClockUncertainty <= 0 {
		t.Errorf("delay note %q, uncertainty %v", tr.DelayNote, tr.ClockUncertainty)
	}
	if tr.DelayP50 < -tr.ClockUncertainty {
		t.Errorf("one-way delay p50 %.0f µs below the uncertainty %.0f µs", tr.DelayP50, tr.ClockUncertainty)
	}
}

// TestSSHMissingToolsReportedPerHost: a tool the hosts lack is reported
// for every host with the install line, and nothing is created on any.
func TestSSHMissingToolsReportedPerHost(t *testing.T) {
	sites := sshtest.New(t, 2)
	bin, _ := tunbench(t)
	s := sshScenario(sites, bin, "native")
	id := testbed.NewID()
	cfg := config(t, sites, s, id)
	cfg.Tools = append(cfg.Tools, remotehost.Tool{Program: "tunbench-no-such-tool", Package: "no-such-package"})
	_, err := ssh.Open(context.Background(), cfg)
	for _, st := range sites.Site {
		want := "host " + st.Config.Name + " lacks tunbench-no-such-tool: apt-get install -y --no-install-recommends no-such-package"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant it to contain %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(testbed.DefaultRoot, id)); err == nil {
		t.Errorf("run directory created although the hosts were refused")
	}
}
