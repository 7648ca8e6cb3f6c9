package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/vishvananda/netlink"
)

// The runner against a fake testbed: no namespaces, no root, no load
// tools. The fake hosts answer the runner's commands and ops with
// captured real output (iperf3's JSON from internal/load/testdata), so
// these tests check what the runner itself decides: one pair per cell,
// setup and teardown paired, failures recorded as failed cells, the run
// going on, every cell committed.

// fakeBed is a testbed whose pairs live on fakeHost.
type fakeBed struct {
	mu            sync.Mutex
	pairs, closed int
	failPair      error
	host          *fakeHost
}

func (b *fakeBed) Name() string { return "fake" }

func (b *fakeBed) Pair(_ context.Context, spec testbed.Spec) (*testbed.Pair, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failPair != nil {
		return nil, b.failPair
	}
	b.pairs++
	a := testbed.NewEndpoint("a", "fake", "fk-a", b.host)
	bb := testbed.NewEndpoint("b", "fake", "fk-b", b.host)
	a.Addr4, bb.Addr4 = localns.UnderlayA4, localns.UnderlayB4
	return testbed.NewPair(a, bb, "/nonexistent/fake", func() error {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.closed++
		return nil
	}), nil
}

// fakeHost runs iperf3 as its captured output and answers ops.
type fakeHost struct {
	iperf3 []byte
	mu     sync.Mutex
	pid    int
	ticks  int
	// oneShot: the iperf3 server is gone (its /proc/PID/stat missing)
	// once a client has run, as "iperf3 -s -1" exits after its test.
	oneShot   bool
	serverPid int
	clientRan bool
	slabReads int
}

func (h *fakeHost) Local() bool { return false }

func (h *fakeHost) Start(_ *testbed.Endpoint, c *testbed.Cmd) (testbed.Proc, error) {
	h.mu.Lock()
	h.pid++
	p := &fakeProc{pid: 1000 + h.pid, done: make(chan struct{})}
	h.mu.Unlock()
	server, cc := false, ""
	for i, a := range c.Args {
		if a == "-s" {
			server = true
		}
		if a == "-C" && i+1 < len(c.Args) {
			cc = c.Args[i+1]
		}
	}
	switch {
	case c.Args[0] == "iperf3" && server:
		// Runs until stopped.
		h.mu.Lock()
		h.serverPid, h.clientRan = p.pid, false
		h.mu.Unlock()
	case c.Args[0] == "iperf3":
		h.mu.Lock()
		h.clientRan = true
		h.mu.Unlock()
		out := h.iperf3
		if cc != "" {
			// The capture ran bbr; iperf3 -C reports the algorithm asked.
			out = bytes.ReplaceAll(out, []byte(`"bbr"`), []byte(`"`+cc+`"`))
		}
		if c.Stdout != nil {
			_, _ = c.Stdout.Write(out)
		}
		p.exit(nil)
	default:
		p.exit(nil)
	}
	return p, nil
}

type fileArgs struct {
	Path string
	Data []byte
	Perm os.FileMode
}

type nlCall struct {
	Method string
}

type nlReply struct {
	Link struct{ L netlink.Link }
}

func (h *fakeHost) Call(_ context.Context, ep *testbed.Endpoint, name string, args []byte) ([]byte, error) {
	switch name {
	case "fs.read":
		var a fileArgs
		if err := testbed.Decode(args, &a); err != nil {
			return nil, err
		}
		if h.gone(a.Path) {
			return nil, fs.ErrNotExist
		}
		return testbed.Encode(h.read(a.Path))
	case "nic.describe":
		return testbed.Encode([]result.Device{{Side: ep.Side, Name: ep.Dev, MTU: 1500}})
	case "nic.speed":
		return nil, errors.New("fake device has no speed")
	case "proc.sockets":
		// The server's listening socket (/net/tcp below) is its own.
		return testbed.Encode([]string{"31337"})
	case "netlink":
		var c nlCall
		if err := testbed.Decode(args, &c); err != nil {
			return nil, err
		}
		var r nlReply
		r.Link.L = &netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: ep.Dev, Flags: net.FlagUp, OperState: netlink.OperUp, Statistics: &netlink.LinkStatistics{}}, LinkType: "veth"}
		return testbed.Encode(r)
	}
	return testbed.Encode(struct{}{})
}

// gone reports whether path is the /proc/PID/stat of a one-shot server
// whose client has run.
func (h *fakeHost) gone(path string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.oneShot && h.clientRan && path == fmt.Sprintf("/proc/%d/stat", h.serverPid)
}

// read is the fake /proc: a listening iperf3 server, advancing CPU time.
func (h *fakeHost) read(path string) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ticks += 100
	switch {
	case path == "/proc/stat":
		return []byte(fmt.Sprintf("cpu  %d 0 %d %d 0 0 0 0 0 0\ncpu0 %d 0 %d %d 0 0 0 0 0 0\n", h.ticks, h.ticks, 4*h.ticks, h.ticks, h.ticks, 4*h.ticks))
	case strings.HasSuffix(path, "/net/tcp"):
		return []byte(fmt.Sprintf("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
			"   0: 00000000:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 31337 1 0000000000000000 100 0 0 10 0\n", iperf3Port))
	case path == "/proc/meminfo":
		// The slab grows by a page a read: the scaled cell's tunnels.
		h.slabReads++
		return []byte(fmt.Sprintf("MemTotal:        2000000 kB\nSlab:             %d kB\nSReclaimable:      1000 kB\n", 100000+4*h.slabReads))
	case path == "/proc/self/status":
		// The agent serving both sides (one process: counted once).
		return []byte("Name:\ttunbench\nPid:\t777\nVmHWM:\t    1536 kB\nVmRSS:\t    1024 kB\n")
	case strings.HasSuffix(path, "/status"):
		return []byte("Name:\tfaked\nVmPeak:\t  9000 kB\nVmRSS:\t    2048 kB\n")
	case strings.HasSuffix(path, "/net/tcp6"):
		return []byte("  sl  local_address rem_address   st\n")
	case strings.HasSuffix(path, "/stat"):
		return []byte(fmt.Sprintf("1 (iperf3) S 1 1 1 0 -1 0 0 0 0 0 %d %d 0 0 20 0 1 0 100 0 0", h.ticks/10, h.ticks/10))
	}
	return nil
}

type fakeProc struct {
	pid  int
	once sync.Once
	done chan struct{}
	err  error
}

func (p *fakeProc) exit(err error) { p.once.Do(func() { p.err = err; close(p.done) }) }
func (p *fakeProc) Pid() int       { return p.pid }
func (p *fakeProc) Wait() error    { <-p.done; return p.err }
func (p *fakeProc) Signal(sig syscall.Signal) error {
	p.exit(&testbed.ExitError{Code: -1, Signal: sig})
	return nil
}

// fakeMethod counts its setups and teardowns.
type fakeMethod struct {
	mu                sync.Mutex
	setups, teardowns int
	failSetup         error
}

func (*fakeMethod) Name() string                       { return "fake" }
func (*fakeMethod) Implementation() string             { return "fake" }
func (*fakeMethod) Overhead(string) int                { return 0 }
func (*fakeMethod) Families() []string                 { return []string{method.IPv4} }
func (*fakeMethod) Requirements() []method.Requirement { return nil }
func (*fakeMethod) Options() []method.Option           { return nil }

func (m *fakeMethod) Setup(_ context.Context, env *method.Env) (*method.Path, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setups++
	if m.failSetup != nil {
		return nil, m.failSetup
	}
	return &method.Path{A: netip.MustParseAddr("198.18.0.1"), B: netip.MustParseAddr("198.18.0.2"),
		Devices: map[string][]string{"a": {env.A.Dev}, "b": {env.B.Dev}}}, nil
}

func (m *fakeMethod) Teardown(context.Context, *method.Env) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.teardowns++
	return nil
}

// memStore keeps what the runner records.
type memStore struct {
	mu     sync.Mutex
	runs   []result.Run
	cells  []result.Cell
	status string
}

func (s *memStore) BeginRun(_ context.Context, r *result.Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, *r)
	return nil
}

func (s *memStore) AddCell(_ context.Context, c *result.Cell) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cells = append(s.cells, *c)
	return int64(len(s.cells)), nil
}

func (s *memStore) FinishRun(_ context.Context, _, status, _ string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
	return nil
}

// newFakeBed is a fake testbed whose iperf3 prints captured output.
func newFakeBed(t *testing.T) *fakeBed {
	t.Helper()
	data, err := os.ReadFile("../load/testdata/iperf3_tcp4_omit.json")
	if err != nil {
		t.Fatal(err)
	}
	return &fakeBed{host: &fakeHost{iperf3: data}}
}

func fakeRun(t *testing.T, ctx context.Context, m *fakeMethod, bed testbed.Testbed, reps int) (*Outcome, *memStore, error) {
	t.Helper()
	sc := scenario.Default()
	sc.Methods = []string{"fake"}
	sc.Repetitions = reps
	sc.Duration, sc.Omit, sc.Latency = "1s", "0s", "0s"
	sc.Tests = []string{scenario.TestTCPStream}
	st := &memStore{}
	out, err := Run(ctx, Config{Scenario: sc, Methods: method.NewRegistry(m), Store: st, Bed: bed,
		ID: testbed.NewID(), BackgroundWindow: 10 * time.Millisecond})
	return out, st, err
}

func TestRunnerOnePairPerCell(t *testing.T) {
	m, bed := &fakeMethod{}, newFakeBed(t)
	out, st, err := fakeRun(t, context.Background(), m, bed, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.cells) != 3 || len(out.Cells) != 3 {
		t.Fatalf("cells recorded: %d, returned %d, want 3", len(st.cells), len(out.Cells))
	}
	for i, c := range st.cells {
		if c.Status != result.StatusOK {
			t.Errorf("cell %d: %s %s", i, c.Status, c.Error)
		}
		if c.Throughput == nil || c.Throughput.BitsPerSecond <= 0 {
			t.Errorf("cell %d: no throughput parsed from the fake host's iperf3", i)
		}
		if c.CPU == nil {
			t.Errorf("cell %d: no CPU record", i)
		}
	}
	if bed.pairs != 3 || bed.closed != 3 || m.setups != 3 || m.teardowns != 3 {
		t.Errorf("pairs %d closed %d setups %d teardowns %d, want 3 each", bed.pairs, bed.closed, m.setups, m.teardowns)
	}
	if st.status != result.RunDone {
		t.Errorf("run status %q, want %q", st.status, result.RunDone)
	}
}

// Without a warm-up the CPU sampler starts before the iperf3 client, so
// a transfer that ends before the sampler could have started (a short one
// on a loaded remote host, whose one-test server then exits) is measured
// with its CPU: it once failed the repetition with "track process N
// (iperf3-server): file does not exist".
func TestRunnerShortTransferOneShotServer(t *testing.T) {
	m, bed := &fakeMethod{}, newFakeBed(t)
	bed.host.oneShot = true
	_, st, err := fakeRun(t, context.Background(), m, bed, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.cells) != 2 {
		t.Fatalf("cells: %d, want 2", len(st.cells))
	}
	for i, c := range st.cells {
		if c.Status != result.StatusOK {
			t.Errorf("cell %d: %s %q, want ok", i, c.Status, c.Error)
		}
		if c.CPU == nil {
			t.Errorf("cell %d: no CPU record", i)
		}
	}
}

// A tcp_stream whose iperf3 finished cleanly but received nothing (a real
// report, boringtun at underlay MTU 9000 before issue 39's fix) fails the
// cell, which keeps the figures measured; it once stood as ok with 0.00
// Gbit/s.
func TestRunnerNothingReceivedIsAFailedCell(t *testing.T) {
	data, err := os.ReadFile("../load/testdata/iperf3_tcp4_nothing_received.json")
	if err != nil {
		t.Fatal(err)
	}
	m, bed := &fakeMethod{}, &fakeBed{host: &fakeHost{iperf3: data}}
	_, st, err := fakeRun(t, context.Background(), m, bed, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.cells) != 1 {
		t.Fatalf("cells: %d, want 1", len(st.cells))
	}
	c := st.cells[0]
	want := "tcp_stream: iperf3 received 0 bytes in 1s over fake: the sender reported 2.63 Mbit/s and 4 retransmits, so the path carried nothing"
	if c.Status != result.StatusFailed || c.Error != want {
		t.Errorf("cell: %s %q, want failed with %q", c.Status, c.Error, want)
	}
	if c.Throughput == nil || c.Throughput.Bytes != 0 || c.Throughput.SenderBitsPerSecond == 0 {
		t.Errorf("throughput %+v, want the measured record kept", c.Throughput)
	}
}

func TestNothingReceived(t *testing.T) {
	if err := nothingReceived("tcp_stream", 1, 0, 0, 1, "native"); err != nil {
		t.Errorf("one byte received: %v, want nil", err)
	}
	err := nothingReceived("parallel", 0, 0, 0, 2.5, "ipsec")
	if want := "parallel: iperf3 received 0 bytes in 2.5s over ipsec: the sender reported 0.00 Mbit/s and 0 retransmits, so the path carried nothing"; err == nil || err.Error() != want {
		t.Errorf("nothing received: %v, want %q", err, want)
	}
}

func TestRunnerFailedSetupIsAFailedCellAndTornDown(t *testing.T) {
	m, bed := &fakeMethod{failSetup: errors.New("no such thing")}, newFakeBed(t)
	_, st, err := fakeRun(t, context.Background(), m, bed, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.cells) != 2 {
		t.Fatalf("cells: %d, want 2 (the run goes on)", len(st.cells))
	}
	for _, c := range st.cells {
		if c.Status != result.StatusFailed || !strings.Contains(c.Error, "set up fake: no such thing") {
			t.Errorf("cell: %s %q, want failed naming the setup", c.Status, c.Error)
		}
		if c.Throughput != nil {
			t.Error("a failed cell carries a throughput")
		}
	}
	if m.teardowns != 2 || bed.closed != 2 {
		t.Errorf("teardowns %d, pairs closed %d: want 2 each after failed setups", m.teardowns, bed.closed)
	}
}

func TestRunnerPairFailureIsAFailedCell(t *testing.T) {
	m, bed := &fakeMethod{}, newFakeBed(t)
	bed.failPair = errors.New("host gone")
	_, st, err := fakeRun(t, context.Background(), m, bed, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.cells) != 1 || st.cells[0].Status != result.StatusFailed || !strings.Contains(st.cells[0].Error, "build testbed: host gone") {
		t.Fatalf("cells: %+v", st.cells)
	}
	if m.setups != 0 {
		t.Errorf("method set up %d times without a testbed", m.setups)
	}
}

func TestRunnerInterruptKeepsMeasuredCells(t *testing.T) {
	m, bed := &fakeMethod{}, newFakeBed(t)
	ctx, cancel := context.WithCancel(context.Background())
	// Interrupt as the second pair is built.
	wrapped := &cancelBed{fakeBed: bed, after: 2, cancel: cancel}
	_, st, err := fakeRun(t, ctx, m, wrapped, 3)
	if err == nil {
		t.Fatal("interrupted run returned no error")
	}
	if st.status != result.RunInterrupted {
		t.Errorf("status %q, want interrupted", st.status)
	}
	if len(st.cells) < 1 || st.cells[0].Status != result.StatusOK {
		t.Errorf("the cell measured before the interrupt is not kept: %+v", st.cells)
	}
	if m.setups != m.teardowns || bed.pairs != bed.closed {
		t.Errorf("setups %d teardowns %d pairs %d closed %d: every setup torn down", m.setups, m.teardowns, bed.pairs, bed.closed)
	}
}

// cancelBed cancels the run when its after-th pair is built.
type cancelBed struct {
	*fakeBed
	n, after int
	cancel   func()
}

func (c *cancelBed) Pair(ctx context.Context, spec testbed.Spec) (*testbed.Pair, error) {
	c.n++
	if c.n == c.after {
		c.cancel()
	}
	return c.fakeBed.Pair(ctx, spec)
}
