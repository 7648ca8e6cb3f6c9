package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/tunbench/tunbench/internal/report/trend"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testenv"
)

// trendRun runs one short native run of the built binary into db. With
// rate > 0 it rate-limits the run's underlay with a tbf qdisc on every
// device of the run's side-a namespace as soon as it exists, before
// anything is measured, for as long as the run lasts: something outside
// the series' key that changes what the series sees.
func trendRun(t *testing.T, bin, db string, rate float64) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--db", db, "--quiet", "--methods", "native",
		"--reps", "3", "--duration", "1s", "--omit", "0s", "--latency", "1s")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	limited := make(chan int, 1)
	if rate > 0 {
		go func() { limited <- rateLimit(t, db, rate, done) }()
	}
	err := cmd.Wait()
	close(done)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if rate > 0 {
		if n := <-limited; n == 0 {
			t.Fatalf("rate limit: no device of the run was limited")
		}
	}
}

// rateLimit finds the run that is running in db (trendRun's runs into
// one db follow one another) and, until done, puts a tbf qdisc of rate
// bit/s on every device of its side-a namespace that lacks one. It
// returns how many it limited. (It found the run by the lock files the
// process held before, and took another test's run for it when the
// process held that run's lock for a moment while cleaning.)
func rateLimit(t *testing.T, db string, rate float64, done <-chan struct{}) int {
	n := 0
	id := ""
	for {
		select {
		case <-done:
			return n
		case <-time.After(time.Millisecond):
		}
		if id == "" {
			id = runningRun(db)
			continue
		}
		ns, err := netns.GetFromName(testbed.NamespaceName(id, "a"))
		if err != nil {
			continue
		}
		h, err := netlink.NewHandleAt(ns)
		ns.Close()
		if err != nil {
			continue
		}
		links, _ := h.LinkList()
		for _, l := range links {
			if l.Type() != "veth" {
				continue
			}
			qs, _ := h.QdiscList(l)
			if slices.ContainsFunc(qs, func(q netlink.Qdisc) bool { return q.Type() == "tbf" }) {
				continue
			}
			q := &netlink.Tbf{
				QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
				Rate:       uint64(rate / 8), Buffer: netlink.Xmittime(uint64(rate/8), 1<<20), Limit: 4 << 20,
			}
			if err := h.QdiscReplace(q); err != nil {
				t.Logf("tbf on %s: %v", l.Attrs().Name, err)
				continue
			}
			n++
		}
		h.Close()
	}
}

// runningRun is the id of the run db records as running, "" while it
// records none.
func runningRun(db string) string {
	st, err := store.Open(db)
	if err != nil {
		return ""
	}
	defer st.Close()
	runs, err := st.Runs(context.Background())
	if err != nil {
		return ""
	}
	for _, r := range runs {
		if r.Status == result.RunRunning {
			return r.ID
		}
	}
	return ""
}

// trendOf runs "tunbench trend --json" over db and returns the
// throughput series of native.
func trendOf(t *testing.T, bin, db string) trend.Series {
	t.Helper()
	out, err := exec.Command(bin, "trend", "--db", db, "--method", "native", "--metric", "throughput", "--include-busy", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("trend: %v\n%s", err, out)
	}
	var doc struct{ Series []trend.Series }
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Series) != 1 {
		t.Fatalf("trend --json: %v, %d series; want one\n%s", err, len(doc.Series), out)
	}
	return doc.Series[0]
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTrendFindsRateLimit: eight real runs of native into one database,
// the last four with the underlay rate-limited to a tenth of the slowest
// repetition of the first four, show one change point, a regression, at
// the fifth run; the same first four runs followed by four left alone
// show none. The change is that large, and each side has twelve
// repetitions, because on this shared machine a run's repetitions can
// spread by a factor of five, and trend claims a change only at p <=
// 0.001. --fail-on-regression fails on the change until it is
// acknowledged. The machine these tests run on is shared and rarely idle,
// so trend counts busy runs here (--include-busy).
func TestTrendFindsRateLimit(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	testenv.NeedProgram(t, "tc", "apt-get install -y --no-install-recommends iproute2")
	dir := t.TempDir()
	limitedDB, aloneDB := filepath.Join(dir, "limited.db"), filepath.Join(dir, "alone.db")
	const runs = 4
	for range runs {
		trendRun(t, bin, limitedDB, 0)
	}
	copyFile(t, limitedDB, aloneDB)
	first := trendOf(t, bin, limitedDB)
	slowest := math.Inf(1)
	for _, p := range first.Points {
		for _, v := range p.Values {
			slowest = min(slowest, v)
		}
	}
	rate := slowest * 1e9 / 10
	for range runs {
		trendRun(t, bin, limitedDB, rate)
		trendRun(t, bin, aloneDB, 0)
	}

	limited := trendOf(t, bin, limitedDB)
	if len(limited.Points) != 2*runs {
		t.Fatalf("limited series: %d points, want %d", len(limited.Points), 2*runs)
	}
	for _, p := range limited.Points {
		if p.Excluded != "" {
			t.Logf("run %s left out: %s (the machine was busy)", p.RunID, p.Excluded)
		}
	}
	// The machine's own load moves every series too (a run beside a
	// build can carry half of one beside nothing): a change of that size
	// is real and may be found in either series, in both at once since
	// their runs alternate. The limit's change is three times larger.
	const limitSized = -80.0
	var found []trend.Change
	for _, c := range limited.Changes {
		if c.Percent <= limitSized {
			found = append(found, c)
		} else {
			t.Logf("limited series: a change of the machine's load too: %+v", c)
		}
	}
	if len(found) != 1 || found[0].Index != runs || !found[0].Regression {
		t.Fatalf("limited series (underlay at %.3g Gbit/s from run %d): change points %+v; want one regression of %.0f%% or more at index %d\npoints %+v",
			rate/1e9, runs+1, limited.Changes, limitSized, runs, limited.Points)
	}
	c := found[0]
	if c.LastBefore != limited.Points[runs-1].RunID || c.FirstAfter != limited.Points[runs].RunID {
		t.Errorf("change %+v: want last before %s, first after %s", c, limited.Points[runs-1].RunID, limited.Points[runs].RunID)
	}
	alone := trendOf(t, bin, aloneDB)
	if len(alone.Points) != 2*runs {
		t.Errorf("series left alone: %d points, want %d", len(alone.Points), 2*runs)
	}
	for _, a := range alone.Changes {
		if a.Percent <= limitSized {
			t.Errorf("series left alone: change %+v, as large as the limit's; want none\npoints %+v", a, alone.Points)
		} else {
			t.Logf("series left alone: a change of the machine's load: %+v", a)
		}
	}

	// The gate, over the throughput series examined above: the RTT
	// series move with the machine's load too (p50 RTT +250% between two
	// busy runs of the series left alone once), and only the throughput
	// series' load changes are acknowledged (ackLoad).
	code, out, errOut := run(t, "trend", "--db", limitedDB, "--metric", "throughput", "--include-busy", "--fail-on-regression")
	if code != ExitTrendRegression || !strings.Contains(out, "change "+c.ID) || !strings.Contains(out, "REGRESSION") {
		t.Errorf("trend --fail-on-regression: exit %d, want %d with change %s listed\n%s%s", code, ExitTrendRegression, c.ID, out, errOut)
	}
	if code, out, errOut := run(t, "trend", "--db", limitedDB, "--ack", c.ID, "--note", "the test's rate limit"); code != 0 {
		t.Fatalf("trend --ack: exit %d\n%s%s", code, out, errOut)
	}
	ackLoad(t, limitedDB, limited, c.ID)
	code, out, errOut = run(t, "trend", "--db", limitedDB, "--metric", "throughput", "--include-busy", "--fail-on-regression", "--record")
	if code != 0 || !strings.Contains(out, "(acknowledged)") {
		t.Errorf("trend --fail-on-regression after --ack: exit %d, want 0 and the change acknowledged\n%s%s", code, out, errOut)
	}
	ackLoad(t, aloneDB, alone, "")
	if code, out, errOut := run(t, "trend", "--db", aloneDB, "--metric", "throughput", "--include-busy", "--fail-on-regression"); code != 0 {
		t.Errorf("trend --fail-on-regression over the series left alone: exit %d\n%s%s", code, out, errOut)
	}
}

// TestTrendBadInput: every malformed flag is refused, naming the flag
// and the fix, before the database is opened.
func TestTrendBadInput(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "none.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--since", "yesterday"}, "--since"},
		{[]string{"--label", "novalue"}, "--label"},
		{[]string{"--metric", "bogus"}, "--metric"},
		{[]string{"--threshold", "-3"}, "--threshold"},
		{[]string{"--max-p", "2"}, "--max-p"},
		{[]string{"--ack", "xyz"}, "--ack"},
	} {
		code, _, errOut := run(t, append([]string{"trend", "--db", db}, tc.args...)...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("trend %v: exit %d, %q; want 1 naming %s", tc.args, code, errOut, tc.want)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("bad input created %s", db)
	}
	if code, _, errOut := run(t, "serve", "--db", db, "--addr", "8080"); code != 1 || !strings.Contains(errOut, "--addr") {
		t.Errorf("serve --addr 8080: exit %d, %q; want 1 naming --addr", code, errOut)
	}
}

// TestServeCommand starts the built binary's "tunbench serve" on a free
// loopback port over a database with one run, fetches the runs page and
// the run's report, and stops it with SIGINT: exit 0.
func TestServeCommand(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	db := filepath.Join(t.TempDir(), "r.db")
	trendRun(t, bin, db, 0)
	cmd := exec.Command(bin, "serve", "--db", db, "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed no address: %v", err)
	}
	i := strings.Index(line, "http://127.0.0.1:")
	if i < 0 {
		t.Fatalf("serve said %q, want the loopback address it listens on", line)
	}
	base := strings.TrimSuffix(strings.Fields(line[i:])[0], "/")
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "1 of 1 runs") || !strings.Contains(string(body), "native") {
		t.Errorf("GET /: %d\n%.500s", resp.StatusCode, body)
	}
	resp, err = http.Get(base + "/run/latest")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<svg") {
		t.Errorf("GET /run/latest: %d, want the report with its figures\n%.300s", resp.StatusCode, body)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGINT: %v, want exit 0", err)
	}
}

// ackLoad acknowledges the regressions of series other than change
// except: changes of the machine's own load, which the gate would
// otherwise rightly fail on.
func ackLoad(t *testing.T, db string, s trend.Series, except string) {
	t.Helper()
	for _, c := range s.Changes {
		if c.Regression && c.ID != except {
			if code, out, errOut := run(t, "trend", "--db", db, "--ack", c.ID, "--note", "the machine's load"); code != 0 {
				t.Fatalf("trend --ack %s: exit %d\n%s%s", c.ID, code, out, errOut)
			}
		}
	}
}
