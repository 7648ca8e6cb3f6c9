package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/scenario"
)

// TestTunnelsRefused: a tunnel count a method cannot set up, or one
// outside the dimension, is refused by the built binary with the exit
// status of bad input, naming the field, the method's maximum, what one
// tunnel is and why, before anything is created: no database, and (run
// in this process, whose namespaces localns counts) no namespace.
func TestTunnelsRefused(t *testing.T) {
	bin := tunbenchBinary(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"native has one", []string{"--methods", "native", "--tunnels", "10"}, []string{
			"tunnels: 10: native over ipv4 sets up at most 1 (one tunnel is one underlay path; native is the underlay itself, with no tunnel to repeat",
			"lower tunnels to 1 or drop native"}},
		{"zero", []string{"--methods", "native", "--tunnels", "0"}, []string{"tunnels: 0 tunnels: use 1 to 100000"}},
		{"above the dimension", []string{"--methods", "native", "--tunnels", "200000"}, []string{"tunnels: 200000 tunnels: use 1 to 100000",
			"tunnels: 200000: native over ipv4 sets up at most 1"}},
		{"reconf needs a grower", []string{"--methods", "native", "--tests", "reconf"}, []string{
			"tests: reconf adds one tunnel to a running set-up and native cannot (it is no method.Grower): drop reconf or drop native"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "r.db")
			cmd := exec.Command(bin, append([]string{"run", "--db", db}, tc.args...)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := errors.AsType[*exec.ExitError](err)
			if !ok || ee.ExitCode() != 1 {
				t.Fatalf("tunbench run %v: %v, want exit status 1 (bad input)\n%s", tc.args, err, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q\ndoes not contain %q", stderr.String(), w)
				}
			}
			if _, err := os.Stat(db); err == nil {
				t.Errorf("a refused run created the database %s", db)
			}
			refused(t, append([]string{"run"}, tc.args...), tc.want...)
		})
	}
}

// TestMethodsOptionsTunnels: "tunbench methods --options" says what one
// of a method's tunnels is, how many it sets up and why, as text and as
// JSON.
func TestMethodsOptionsTunnels(t *testing.T) {
	code, out, stderr := run(t, "methods", "--options", "openvpn")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"Tunnels between the endpoints (--tunnels", "ONE TUNNEL IS ONE", "client (TLS session to the server)", "openvpn runs one server daemon"} {
		if !strings.Contains(out, w) {
			t.Errorf("methods --options openvpn lacks %q:\n%s", w, out)
		}
	}
	code, out, stderr = run(t, "methods", "--options", "all", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc optionsJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Options) == 0 {
		t.Error("--json lists no options")
	}
	seen := map[string]bool{}
	for _, s := range doc.Tunnels {
		seen[s.Method] = true
		if s.Max < 1 || s.Unit == "" || s.Why == "" || len(s.Families) == 0 {
			t.Errorf("tunnels row %+v: want families, a unit, a maximum and why", s)
		}
		if s.Method == "native" && (s.Max != 1 || !strings.Contains(s.Why, "the underlay itself") || len(s.Families) != 2) {
			t.Errorf("native %+v: want one row for both families, at most 1, and why", s)
		}
	}
	for _, m := range []string{"native", "vxlan", "wireguard-go", "ipsec"} {
		if !seen[m] {
			t.Errorf("--json tunnels lack %s", m)
		}
	}
}

// TestDryRunEstimatesTunnels: the dry run's summary says what the
// tunnels dimension adds to the estimate, labelled estimated; a matrix
// of one tunnel says nothing of it.
func TestDryRunEstimatesTunnels(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"vxlan"}
	s.Tunnels = []int{1, 1000}
	s.Repetitions = 1
	var out strings.Builder
	if err := dryRun(&out, s, registry.Builtin(), nil); err != nil {
		t.Fatal(err)
	}
	if want := "plus an estimated 42s to set up and tear down the tunnels of the tunnels dimension (docs/scale.md)"; !strings.Contains(out.String(), want) {
		t.Errorf("dry run:\n%s\nlacks %q", out.String(), want)
	}
	s.Tunnels = nil
	out.Reset()
	if err := dryRun(&out, s, registry.Builtin(), nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "tunnels dimension") {
		t.Errorf("dry run of one tunnel speaks of the dimension:\n%s", out.String())
	}
}
