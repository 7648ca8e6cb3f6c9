package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/store/pgtest"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// TestDBRefused: a --db or TUNBENCH_DB value that is neither a file path
// nor a supported URL is refused by every command that opens the store,
// with the forms that are accepted, and nothing is created (once
// "postgres:" was taken for a directory and a SQLite file made in it).
func TestDBRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, bad := range []string{"mysql://root@127.0.0.1:3306/tb", "postgres:tb", "postgres://u:hunter2@127.0.0.1:5432"} {
		for _, args := range [][]string{
			{"run", "--methods", "native", "--db", bad},
			{"results", "--db", bad},
			{"results", "show", "--db", bad},
			{"compare", "--db", bad, "a", "b"},
			{"report", "--db", bad, "-o", "r.html"},
			{"results", "push", "latest", "--to", bad},
		} {
			code, _, stderr := run(t, args...)
			if code != 1 || !strings.Contains(stderr, "postgres://USER@HOST:PORT/DATABASE") || !strings.Contains(stderr, "SQLite file path") {
				t.Errorf("tunbench %s: exit %d, stderr %q; want 1 with the accepted forms", strings.Join(args, " "), code, stderr)
			}
			if strings.Contains(stderr, "hunter2") {
				t.Errorf("tunbench %s: stderr shows the password: %q", strings.Join(args, " "), stderr)
			}
		}
	}
	t.Setenv(store.EnvDB, "mysql://root@127.0.0.1/tb")
	code, _, stderr := run(t, "results")
	if code != 1 || !strings.Contains(stderr, store.EnvDB+": ") || !strings.Contains(stderr, "postgres://") {
		t.Errorf("a bad %s: exit %d, stderr %q; want it named, with the accepted forms", store.EnvDB, code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused --db values created %v", entries)
	}
}

// TestLabelRefused: a label key that breaks the rule is refused, naming
// the rule and the fix, before anything is created.
func TestLabelRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	for _, tt := range []struct{ label, want string }{
		{"Kernel=6.18", `use "kernel"`},
		{"ticket", "KEY=VALUE"},
		{"a b=c", "lowercase letters, digits"},
	} {
		code, _, stderr := run(t, "run", "--db", db, "--methods", "native", "--label", tt.label)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("--label %q: exit %d, stderr %q; want 1 and %q", tt.label, code, stderr, tt.want)
		}
	}
	code, _, stderr := run(t, "run", "--db", db, "--methods", "native", "--label", "k=1", "--label", "k=2")
	if code != 1 || !strings.Contains(stderr, "given twice") {
		t.Errorf("a key given twice: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a refused label created the database")
	}
}

// TestDBPostgresAndPush: a real run straight into PostgreSQL (a server of
// the test's own), labelled; a real run into a local file, pushed to the
// same database twice (the second a no-op); both then listed, exported
// and compared from PostgreSQL, with their labels.
func TestDBPostgresAndPush(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	url := pgtest.URL(t)
	file := filepath.Join(t.TempDir(), "laptop.db")
	short := []string{"--quiet", "--methods", "native", "--duration", "1s", "--omit", "0s", "--latency", "1s", "--reps", "2"}

	code, stdout, stderr := run(t, append([]string{"run", "--db", url, "--label", "kernel_commit=3f2a9c1", "--label", "ticket=NET-42",
		"--export", filepath.Join(t.TempDir(), "a.json")}, short...)...)
	if code != 0 {
		t.Fatalf("run into PostgreSQL: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(t, append([]string{"run", "--db", file, "--label", "machine=laptop"}, short...)...)
	if code != 0 {
		t.Fatalf("run into a file: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(file), "exports")); err != nil {
		t.Errorf("the file run's export is not beside its database: %v", err)
	}

	code, stdout, stderr = run(t, "results", "push", "latest", "--db", file, "--to", url)
	if code != 0 || !strings.Contains(stdout, "pushed 1 run(s) with 2 cell(s)") {
		t.Fatalf("push: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = run(t, "results", "push", "latest", "--db", file, "--to", url)
	if code != 0 || !strings.Contains(stdout, "pushed 0 run(s)") || !strings.Contains(stdout, "already there") {
		t.Fatalf("second push is not a no-op: exit %d\n%s\n%s", code, stdout, stderr)
	}

	code, stdout, stderr = run(t, "results", "--db", url)
	if code != 0 || strings.Count(stdout, "\n") != 3 || !strings.Contains(stdout, "kernel_commit=3f2a9c1,ticket=NET-42") ||
		!strings.Contains(stdout, "machine=laptop") {
		t.Fatalf("results from PostgreSQL: exit %d, want both runs with their labels\n%s\n%s", code, stdout, stderr)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		ids = append(ids, strings.Fields(l)[0])
	}
	code, stdout, stderr = run(t, "results", "export", "--db", url, "--format", "json", ids[1])
	var doc export.Document
	if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil {
		t.Fatalf("export from PostgreSQL: exit %d, %s", code, stderr)
	}
	if doc.Run.Labels["ticket"] != "NET-42" || len(doc.Cells) != 2 {
		t.Errorf("exported run: labels %v, %d cells; want ticket=NET-42 and 2 cells", doc.Run.Labels, len(doc.Cells))
	}
	code, stdout, stderr = run(t, "compare", "--db", url, ids[1], ids[0])
	if code == 1 || !strings.Contains(stdout, "verdict: ") {
		t.Errorf("compare in PostgreSQL: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestDBFromEnv: TUNBENCH_DB names the store when --db is not given.
func TestDBFromEnv(t *testing.T) {
	url := pgtest.URL(t)
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv(store.EnvDB, url)
	code, stdout, stderr := run(t, "results")
	if code != 0 || !strings.HasPrefix(stdout, "RUN") {
		t.Fatalf("results with %s=%s: exit %d\n%s%s", store.EnvDB, url, code, stdout, stderr)
	}
	code, _, stderr = run(t, "results", "show", "nope")
	if code != 1 || !strings.Contains(stderr, "find run nope: not found") {
		t.Errorf("results show nope: exit %d, %q", code, stderr)
	}
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("with %s set, the default file was used: %v", store.EnvDB, entries)
	}
}

// TestPushKilled: a push killed half way (SIGKILL, no chance to clean up)
// leaves every run on the target whole or absent, never partial; pushing
// again completes it. The runs are copies of the fixture's real ones.
func TestPushKilled(t *testing.T) {
	t.Parallel()
	bin := tunbenchBinary(t)
	url := pgtest.URL(t)
	db, ids := fixtureDB(t)
	var all []string
	for i := range 60 {
		for _, id := range ids {
			all = append(all, addCopy(t, db, id, strconv.Itoa(i), func(*result.Cell) bool { return true }))
		}
	}
	cmd := exec.Command(bin, append([]string{"results", "push", "--db", db, "--to", url}, all...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	target, err := store.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		runs, err := target.Runs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()

	src, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	check := func(when string) int {
		t.Helper()
		runs, err := target.Runs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			_, got, err := target.Run(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			_, want, err := src.Run(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("%s: run %s has %d of its %d cells on the target", when, r.ID, len(got), len(want))
			}
		}
		return len(runs)
	}
	n := check("after the kill")
	if n == len(all) {
		t.Logf("the push finished before the kill: %s", out.String())
	}
	code, stdout, stderr := run(t, append([]string{"results", "push", "--db", db, "--to", url}, all...)...)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("pushed %d run(s)", len(all)-n)) {
		t.Fatalf("push after the kill: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := check("after pushing again"); got != len(all) {
		t.Errorf("after pushing again the target has %d runs, want %d", got, len(all))
	}
}
