package cli

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/lab/labtest"
	"github.com/tunbench/tunbench/internal/result"
)

// envTestBinary names a tunbench binary built by the host side of a lab
// test, so that the guest does not build one under emulation.
const envTestBinary = "TUNBENCH_TEST_BINARY"

// TestKernelLabRunEveryRepetitionOK runs tunbench as a user would in the
// kernel lab, four kernel-only methods three times each, and checks that
// every repetition it asked for is ok: a run that loses repetitions to a
// fault that did not happen hides half of the lab's figures.
func TestKernelLabRunEveryRepetitionOK(t *testing.T) {
	t.Parallel()
	labRunEveryRepetitionOK(t, []string{"geneve", "gre", "wireguard", "ipsec"}, 3)
}

// TestKernelLabMeshVPNs: the mesh VPNs on the vm testbed, nebula (its
// lighthouse on side b) and tailscale (its control server, DERP and STUN
// started through side a), once each, every cell ok with throughput.
func TestKernelLabMeshVPNs(t *testing.T) {
	t.Parallel()
	labRunEveryRepetitionOK(t, []string{"nebula", "tailscale"}, 1)
}

// labRunEveryRepetitionOK runs "tunbench run --testbed vm" of methods,
// reps times each, and checks that the run is recorded on testbed vm, as
// emulated, and that every repetition is ok with a throughput.
func labRunEveryRepetitionOK(t *testing.T, methods []string, reps int) {
	t.Helper()
	if labtest.InLab() {
		t.Skip("already inside the kernel lab")
	}
	bin := tunbenchBinary(t)
	_ = labtest.Config(t) // skips without the lab; one guest at a time
	dir := t.TempDir()
	export := filepath.Join(dir, "run.json")
	cmd := exec.Command(bin, "run", "--testbed", "vm", "--methods", strings.Join(methods, ","),
		"--reps", strconv.Itoa(reps), "--duration", "1s", "--omit", "0s", "--latency", "0s",
		"--db", filepath.Join(dir, "r.db"), "--export", export, "--quiet")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tunbench run --testbed vm: %v\n%s", err, out)
	}
	doc := exportOf(t, export)
	if h := doc.Run.Host; h.Class != result.ClassEmulated || !doc.Emulated {
		t.Errorf("the lab's run: host class %q (%s), emulated %v; want emulated", h.Class, h.ClassLabel(), doc.Emulated)
	}
	if doc.Run.Testbed != "vm" {
		t.Errorf("the lab's run is recorded on testbed %q, want vm", doc.Run.Testbed)
	}
	ok := map[string]int{}
	for _, c := range doc.Cells {
		switch {
		case c.Status != result.StatusOK:
			t.Errorf("%s repetition %d: %s: %s", c.Method, c.Repetition, c.Status, c.Error)
		case c.Throughput == nil || c.Throughput.BitsPerSecond <= 0:
			t.Errorf("%s repetition %d: no throughput measured", c.Method, c.Repetition)
		default:
			ok[c.Method]++
		}
	}
	for _, m := range methods {
		if ok[m] != reps {
			t.Errorf("%s: %d of %d repetitions ok", m, ok[m], reps)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestKernelLabFaults runs the TestLabFault* tests of this package inside
// the kernel lab, with the tunbench binary built here.
func TestKernelLabFaults(t *testing.T) {
	t.Parallel()
	if labtest.InLab() {
		t.Skip("already inside the kernel lab")
	}
	bin := tunbenchBinary(t)
	labtest.RunTestsInGuestWith(t, ".", "^TestLabFault", labtest.Options{Env: []string{envTestBinary + "=" + bin}})
}

// TestLabFaultUnderlayDown, in the guest: an underlay set down mid-cell
// still fails that cell with the watch's message, and the next cell (a
// kernel-only method) is measured as usual.
func TestLabFaultUnderlayDown(t *testing.T) {
	labtest.RequireLab(t)
	if !labtest.InLab() {
		t.Skip("runs inside the kernel lab (TestKernelLabFaults)")
	}
	underlayDownFailsTheCell(t, tunbenchBinary(t), "geneve")
}
