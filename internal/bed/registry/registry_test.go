package registry_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/bed/registry"
	"github.com/tunbench/tunbench/internal/method"
	methods "github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/scenario"
)

// Every testbed is one entry that a run can start on and that names
// itself; the command line's lists of testbeds come from the entries.
func TestEntries(t *testing.T) {
	var names []string
	for _, e := range registry.Entries() {
		names = append(names, e.Name)
		if e.Description == "" || e.Preflight == nil {
			t.Errorf("%s: no description or no preflight", e.Name)
		}
		if e.Open == nil {
			t.Errorf("%s: no Open: the session opens every testbed alike", e.Name)
		}
		if e.Remote && (e.Clean == nil || e.Scenario.Check == nil) {
			t.Errorf("%s: a remote testbed cleans its hosts and checks the scenario's section naming them", e.Name)
		}
	}
	if want := []string{"local", "vm", "ssh", "kubernetes"}; !slices.Equal(names, want) {
		t.Errorf("testbeds %v, want %v", names, want)
	}
	if e, err := registry.Lookup(""); err != nil || e.Name != "local" {
		t.Errorf(`Lookup(""): %v %v, want the default, local`, e.Name, err)
	}
	if _, err := registry.Lookup("qemu"); err == nil || err.Error() != `unknown testbed "qemu": use local (the default), vm, ssh or kubernetes` {
		t.Errorf("Lookup(qemu): %v", err)
	}
	if _, ok := registry.Named(""); ok {
		t.Error(`Named("") found a testbed: only Lookup takes "" for the default`)
	}
	if got, want := registry.Help(nil, true), "local (default), vm (the kernel lab), ssh (the hosts of the scenario's ssh section, -f) or kubernetes (the nodes of its kubernetes section, -f)"; got != want {
		t.Errorf("Help:\n got %s\nwant %s", got, want)
	}
	if got, want := registry.Choices(func(e bed.Entry) bool { return e.Clean != nil }), "local (the default), ssh or kubernetes"; got != want {
		t.Errorf("Choices(clean): %s, want %s", got, want)
	}
}

// The scenario's validation asks the entries: an unknown testbed is
// refused naming them, and a section only another testbed uses is
// refused with its fix.
func TestCatalogValidates(t *testing.T) {
	c := registry.Catalog(methods.Builtin())
	s := scenario.Default()
	s.Testbed = "qemu"
	if err := s.Validate(c); err == nil || !strings.Contains(err.Error(), `testbed: unknown testbed "qemu": use local, vm, ssh or kubernetes`) {
		t.Errorf("unknown testbed: %v", err)
	}
	s = scenario.Default()
	s.Kernel = "/boot/vmlinuz"
	s, err := s.WithSection("ssh", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Validate(c)
	for _, want := range []string{"kernel: a kernel is only booted by testbed vm", "ssh: hosts are only used by testbed ssh"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("stray sections on testbed local: %v, want %q", err, want)
		}
	}
	s = scenario.Default()
	s.Testbed = "ssh"
	if err := s.Validate(c); err == nil || !strings.Contains(err.Error(), "ssh.sites: testbed ssh needs at least two sites") {
		t.Errorf("ssh without sites: %v", err)
	}
}

// probe is a machine with no kernel options and no programs.
type probe struct{}

func (probe) HasKernel(string, string) (bool, error) { return false, nil }
func (probe) HasProgram(string) bool                 { return false }

// The local testbed asks this machine for root, the load tools, veth and
// each method's kernel options; the kernel lab only for programs (the
// guest's kernel is not this one); the remote testbeds for nothing.
func TestPreflight(t *testing.T) {
	env := bed.Env{Probe: func() method.Probe { return probe{} }, Root: func() bool { return false }}
	reg := methods.Builtin()
	s := scenario.Default()
	s.Methods = []string{"native", "vxlan"}
	for _, tc := range []struct {
		bed       string
		want, not []string
	}{
		{"local", []string{"not running as root", "iperf3 missing", "testbed local", "method vxlan: "}, nil},
		{"vm", []string{"not running as root", "iperf3 missing"}, []string{"testbed local", "method vxlan"}},
		{"ssh", nil, nil},
		{"kubernetes", nil, nil},
	} {
		e, _ := registry.Lookup(tc.bed)
		s.Testbed = tc.bed
		err := e.Preflight(s, reg, env)
		if (err == nil) != (tc.want == nil) {
			t.Errorf("%s: %v", tc.bed, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", tc.bed, err, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, should not say %q", tc.bed, err, w)
			}
		}
	}
}
