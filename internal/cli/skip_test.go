package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// A method the machine cannot carry refuses the run before anything is
// created; with --skip-unavailable the run measures the rest, and the
// table, the stored scenario and the report (regenerated offline from the
// database) name each skipped method with its reason. The kernel without
// geneve and WireGuard is faked, so the test runs on any kernel (this
// project's host lacks both anyway).
func TestSkipUnavailable(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	env := kernelWithout("CONFIG_GENEVE", "CONFIG_WIREGUARD")
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	args := []string{"run", "-f", "../../examples/paper-singlestream.yaml", "--methods", "native,geneve,wireguard",
		"--scale", "0.02", "--reps", "2", "--db", db}

	code, _, stderr := runWith(t, env, args...)
	if code == 0 || !strings.Contains(stderr, "method geneve: ") || !strings.Contains(stderr, "CONFIG_GENEVE missing") ||
		!strings.Contains(stderr, "method wireguard: ") {
		t.Fatalf("unavailable methods without --skip-unavailable: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("the refused run created the database")
	}

	export := filepath.Join(dir, "run.json")
	code, stdout, stderr := runWith(t, env, append(args, "--skip-unavailable", "--export", export)...)
	if code != 0 {
		t.Fatalf("--skip-unavailable: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "skipping geneve: not supported on this machine: CONFIG_GENEVE missing") {
		t.Errorf("no notice of the skip on stderr:\n%s", stderr)
	}
	doc := exportOf(t, export)
	if len(doc.Cells) != 2 {
		t.Errorf("%d cells, want native's 2 repetitions", len(doc.Cells))
	}
	for _, c := range doc.Cells {
		if c.Method != "native" || c.Status != result.StatusOK || c.Throughput == nil || c.Latency == nil {
			t.Errorf("%s rep %d: %s: %s", c.Method, c.Repetition, c.Status, c.Error)
		}
	}
	if !strings.Contains(doc.Run.Scenario, "skipped:") || !strings.Contains(doc.Run.Scenario, "CONFIG_WIREGUARD missing") {
		t.Errorf("stored scenario lacks the skipped methods:\n%s", doc.Run.Scenario)
	}
	for _, want := range []string{
		"Skipped method geneve (--skip-unavailable), not measured: not supported on this machine: CONFIG_GENEVE missing",
		"Skipped method wireguard (--skip-unavailable), not measured: not supported on this machine: CONFIG_WIREGUARD missing",
		"native tcp_stream throughput (MTU 1500, 1 stream): paper 88 Mbit/s, ours ",
		"geneve tcp_stream throughput (MTU 1500, 1 stream): paper 23.5 Gbit/s, ours —, absolute —; not measured: the run",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}

	html := filepath.Join(dir, "report.html")
	if code, _, stderr := run(t, "report", "--db", db, "-o", html); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<table class="reference">`, "Skipped method wireguard (--skip-unavailable), not measured", "CONFIG_WIREGUARD missing"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// With every method unavailable, --skip-unavailable leaves nothing to
// measure and refuses the run, giving each reason.
func TestSkipUnavailableNothingLeft(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	code, _, stderr := runWith(t, kernelWithout("CONFIG_GENEVE"), "run", "--methods", "geneve", "--skip-unavailable", "--db", db)
	if code == 0 || !strings.Contains(stderr, "--skip-unavailable leaves no method to measure") || !strings.Contains(stderr, "method geneve: not supported on this machine: CONFIG_GENEVE missing") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the refused run created the database")
	}
}
