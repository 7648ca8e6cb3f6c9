package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/result"
)

// TestConcurrentRunsShareOneDatabase starts two real runs at once,
// writing to one database, and runs "tunbench clean" while the first is
// measuring: neither run touches the other's objects, clean touches
// nothing of a live run, and every cell of both runs is stored.
func TestConcurrentRunsShareOneDatabase(t *testing.T) {
	// Serial: it leaves a killed run's state on the machine, or cleans
	// every killed run's, and any other run's start cleans them too
	// (parallelTests).
	bin := tunbenchBinary(t)
	db := filepath.Join(t.TempDir(), "r.db")
	start := func(methods string) (*exec.Cmd, *bytes.Buffer) {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "run", "--db", db, "--methods", methods, "--duration", "2s",
			"--omit", "0s", "--latency", "1s", "--reps", "2", "--export", filepath.Join(t.TempDir(), "x.json"))
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, &stderr
	}
	a, aErr := start("native,vxlan")
	b, bErr := start("native")

	// While a measures, clean must leave it alone.
	var ns string
	for deadline := time.Now().Add(60 * time.Second); ns == "" && time.Now().Before(deadline); {
		ns = iperf3Namespace(a.Process.Pid)
		time.Sleep(50 * time.Millisecond)
	}
	if ns == "" {
		t.Fatalf("run a never started iperf3:\n%s", aErr.String())
	}
	if code, out, stderr := run(t, "clean"); code != 0 {
		t.Errorf("clean during a live run: exit %d: %s%s", code, out, stderr)
	}
	if _, err := os.Stat("/run/netns/" + ns); err != nil {
		t.Errorf("clean removed namespace %s of a live run", ns)
	}

	ids := map[string]int{} // run id -> cells it must have stored
	for _, r := range []struct {
		cmd    *exec.Cmd
		stderr *bytes.Buffer
		cells  int
	}{{a, aErr, 4}, {b, bErr, 2}} {
		if err := r.cmd.Wait(); err != nil {
			t.Fatalf("%v: %v\n%s", r.cmd.Args, err, r.stderr.String())
		}
		m := regexp.MustCompile(`\nrun ([0-9a-z-]+): `).FindStringSubmatch(r.stderr.String())
		if m == nil {
			t.Fatalf("no run id in the output of %v:\n%s", r.cmd.Args, r.stderr.String())
		}
		ids[m[1]] = r.cells
	}
	if len(ids) != 2 {
		t.Fatalf("two runs got the same id: %v", ids)
	}
	for id, want := range ids {
		code, out, stderr := run(t, "results", "export", "--db", db, "--format", "json", id)
		if code != 0 {
			t.Fatalf("export %s: exit %d: %s", id, code, stderr)
		}
		var doc export.Document
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Run.Status != result.RunDone || len(doc.Cells) != want {
			t.Errorf("run %s: status %s, %d cells; want done and %d", id, doc.Run.Status, len(doc.Cells), want)
		}
		for _, c := range doc.Cells {
			if c.Status != result.StatusOK {
				t.Errorf("run %s: %s rep %d: %s: %s", id, c.Method, c.Repetition, c.Status, c.Error)
			}
		}
	}
}
