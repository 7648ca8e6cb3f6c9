package methodtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// RecordPrefix is the device prefix of the recorded set-ups (a fixed run
// id, so that the golden files hold the same names on every run).
const RecordPrefix = "tb1a2b3c"

// Recorded is what a method did to the two hosts of a recorded run.
type Recorded struct {
	A, B *testbedtest.Recorder
	Env  *method.Env
}

// RecordEnv returns an Env for m in family over two recording endpoints
// (testbedtest.NewRecordingEndpoint, underlay device "veth0", MTU 1500),
// with options opts.
func RecordEnv(m method.Method, family string, opts map[string]string) *Recorded {
	a, ra := testbedtest.NewRecordingEndpoint("a", "veth0")
	b, rb := testbedtest.NewRecordingEndpoint("b", "veth0")
	return &Recorded{A: ra, B: rb, Env: &method.Env{
		A: a, B: b, Family: family, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(family),
		Prefix: RecordPrefix, Dir: testbedtest.RecordDir, Options: opts,
	}}
}

// Record sets m up on rec's endpoints and tears it down again, and
// returns what each did as text: a "# a: setup" section with side a's
// lines, then b's, a "# path" line with what Setup returned, then the
// teardown sections. Setup or Teardown failing fails t.
func Record(t testing.TB, m method.Method, rec *Recorded) []string {
	t.Helper()
	ctx := context.Background()
	path, err := m.Setup(ctx, rec.Env)
	if err != nil {
		t.Fatalf("%s %s Setup on recording endpoints: %v", m.Name(), rec.Env.Family, err)
	}
	var out []string
	out = append(out, "# a: setup")
	out = append(out, rec.A.Lines()...)
	out = append(out, "# b: setup")
	out = append(out, rec.B.Lines()...)
	out = append(out, "# path "+pathLine(path))
	if err := m.Teardown(ctx, rec.Env); err != nil {
		t.Fatalf("%s %s Teardown on recording endpoints: %v", m.Name(), rec.Env.Family, err)
	}
	out = append(out, "# a: teardown")
	out = append(out, rec.A.Lines()...)
	out = append(out, "# b: teardown")
	out = append(out, rec.B.Lines()...)
	return out
}

// pathLine is a Path as one line, in a fixed order.
func pathLine(p *method.Path) string {
	var f []string
	f = append(f, fmt.Sprintf("%s -> %s", p.A, p.B))
	for _, side := range slices.Sorted(maps.Keys(p.Devices)) {
		f = append(f, fmt.Sprintf("%s=%s", side, strings.Join(p.Devices[side], ",")))
	}
	for _, d := range p.Daemons {
		f = append(f, fmt.Sprintf("daemon %s/%s", d.Side, d.Role))
	}
	f = append(f, fmt.Sprintf("variant %q", p.Variant))
	if p.Datapath != "" {
		f = append(f, "datapath "+p.Datapath)
	}
	if p.OverlayMTU != 0 {
		f = append(f, fmt.Sprintf("mtu %d", p.OverlayMTU))
	}
	return strings.Join(f, " ")
}
