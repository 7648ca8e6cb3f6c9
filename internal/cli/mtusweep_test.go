package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/report/render"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// examples/mtu-sweep.yaml (seed 004) at --scale 0.05, one repetition, with
// the example's methods this kernel carries (ip6ip6, ip6gre and kernel
// wireguard need modules; --testbed vm has them): the report has figure
// files of its own for every MSS, which used to overwrite each other, and
// a throughput-against-MSS figure with a line for every method at every
// MSS.
func TestMTUSweepReport(t *testing.T) {
	t.Parallel()
	testbedtest.RequireNetAdmin(t)
	testenv.NeedProgram(t, "iperf3", "apt-get install -y --no-install-recommends iperf3")
	const example = "../../examples/mtu-sweep.yaml"
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, st := range methodStatuses(registry.Builtin(), bed.NewHostProbe()) {
		if st.Ready && slices.Contains(s.Methods, st.Name) {
			methods = append(methods, st.Name)
		}
	}
	if len(methods) < 2 || !slices.Contains(methods, "native") {
		t.Fatalf("this kernel carries %v of the example's %v; native and one tunnel are needed", methods, s.Methods)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "r.db")
	code, stdout, stderr := run(t, "run", "-f", example, "--scale", "0.05", "--reps", "1",
		"--methods", strings.Join(methods, ","), "--db", db, "--quiet")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := st.Runs(context.Background())
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v: %v", runs, err)
	}
	r, cells, err := st.Run(context.Background(), runs[0].ID)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "sweep.html")
	if code, _, stderr := run(t, "report", "--db", db, "-o", html, r.ID); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	files, err := os.ReadDir(render.ReportFilesDir(html))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	has := func(parts ...string) bool {
		return slices.ContainsFunc(names, func(n string) bool {
			for _, p := range parts {
				if !strings.Contains(n, p) {
					return false
				}
			}
			return true
		})
	}
	for _, mss := range []string{"mss1220", "mss472", "mss216"} {
		for _, m := range methods {
			for _, ext := range []string{".svg", ".png"} {
				if !has("-throughput-time-"+m+"-", "-"+mss, ext) {
					t.Errorf("no %s throughput figure at %s (%s) among %d files", m, mss, ext, len(names))
				}
			}
		}
		if !has("-throughput-methods-", "-"+mss, ".svg") {
			t.Errorf("no methods-side-by-side figure at %s", mss)
		}
	}
	var sweep *render.Chart
	for _, c := range render.Charts(r, cells) {
		if strings.Contains(c.ID, "-mss-lines-") {
			if sweep != nil {
				t.Errorf("two throughput-against-MSS figures: %s and %s", sweep.ID, c.ID)
			}
			sweep = &c
		}
	}
	if sweep == nil {
		t.Fatal("no throughput-against-MSS figure")
	}
	for _, ext := range []string{".svg", ".png"} {
		if !slices.Contains(names, sweep.ID+ext) {
			t.Errorf("no file %s%s", sweep.ID, ext)
		}
	}
	var lines []string
	for _, s := range sweep.Series {
		lines = append(lines, s.Name)
		if !slices.Equal(s.X, []float64{216, 472, 1220}) {
			t.Errorf("%s: %s at MSS %v, want 216, 472 and 1220", sweep.ID, s.Name, s.X)
		}
	}
	if !slices.Equal(lines, methods) {
		t.Errorf("%s: lines %v, want every method %v", sweep.ID, lines, methods)
	}
}
