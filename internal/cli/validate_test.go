package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated options table of docs/methods.md")

// refused runs tunbench with args, wants a non-zero exit whose stderr
// holds every string of want, and checks that nothing was created: no
// database and no namespace (counted in this process, so that other test
// packages' namespaces do not count).
func refused(t *testing.T, args []string, want ...string) {
	t.Helper()
	before := localns.NamespacesCreated()
	db := filepath.Join(t.TempDir(), "r.db")
	code, _, stderr := run(t, append(append([]string{}, args[0], "--db", db), args[1:]...)...)
	if code == 0 {
		t.Fatalf("%v: bad input accepted", args)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%v: stderr %q\ndoes not contain %q", args, stderr, w)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("%v: a refused run created the database", args)
	}
	if n := localns.NamespacesCreated() - before; n != 0 {
		t.Errorf("%v: a refused run created %d namespaces", args, n)
	}
}

// TestEveryMethodsOptionsAreValidated gives every method an unknown
// option and, for each option it declares, values outside what it
// accepts: each is refused before anything is created, naming the option
// and the valid keys or range.
func TestEveryMethodsOptionsAreValidated(t *testing.T) {
	for _, m := range registry.Builtin().All() {
		t.Run(m.Name(), func(t *testing.T) {
			base := []string{"run", "--methods", m.Name(), "--family", m.Families()[0]}
			valid := "it takes no options"
			if decl := m.Options(); len(decl) > 0 {
				names := make([]string, len(decl))
				for i, o := range decl {
					names[i] = o.Name
				}
				slices.Sort(names)
				valid = "valid options are " + strings.Join(names, ", ")
			}
			refused(t, append(base, "--option", m.Name()+".nosuch=1"),
				fmt.Sprintf(`options.%s: %s: unknown option "nosuch": %s`, m.Name(), m.Name(), valid))
			for _, o := range m.Options() {
				bad := []string{"abc", "-1"}
				if o.Values == nil {
					bad = append(bad, fmt.Sprint(o.Min-1), fmt.Sprint(o.Max+1))
				}
				for _, v := range bad {
					refused(t, append(base, "--option", m.Name()+"."+o.Name+"="+v),
						fmt.Sprintf(`options.%s: %s: option %s=%q: want %s`, m.Name(), m.Name(), o.Name, v, o.Valid()))
				}
			}
		})
	}
}

// TestBadNumbersAreRefused: a zero, negative or out-of-range number in a
// flag or a scenario field is an error naming the field and the range,
// never a silent default.
func TestBadNumbersAreRefused(t *testing.T) {
	scen := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(scen, []byte("repetitions: 0\nstreams: [0]\nmtus: [-1500]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--reps", "0"}, []string{"repetitions: 0: use 1 to 1000"}},
		{[]string{"run", "--reps", "-3"}, []string{"repetitions: -3: use 1 to 1000"}},
		{[]string{"run", "--reps", "1001"}, []string{"repetitions: 1001: use 1 to 1000"}},
		{[]string{"run", "--streams", "0"}, []string{"streams: 0 parallel streams: use 1 to 4096"}},
		{[]string{"run", "--streams", "129"}, []string{"streams: 129 streams: tcp_stream runs one iperf3 process, which takes at most 128"}},
		{[]string{"run", "--mtu", "0"}, []string{"mtus: underlay MTU 0 out of range: use 576 to 65535"}},
		{[]string{"run", "--mtu", "70000"}, []string{"mtus: underlay MTU 70000 out of range"}},
		{[]string{"run", "--duration", "0s"}, []string{"duration: 0s is too short"}},
		{[]string{"run", "--duration", ""}, []string{`duration: malformed duration ""`}},
		{[]string{"run", "--omit", "-1s"}, []string{"omit: negative duration -1s"}},
		{[]string{"run", "--latency", "-2s"}, []string{"latency: negative duration -2s"}},
		{[]string{"run", "--vm-memory", "0"}, []string{"--vm-memory 0: use 256 to 16384 MiB"}},
		{[]string{"run", "--vm-memory", "100000"}, []string{"--vm-memory 100000: use 256 to 16384 MiB"}},
		{[]string{"run", "--testbed", "vm", "--vm-timeout", "2m"}, []string{"--vm-timeout 2m0s: give at least 5m0s"}},
		{[]string{"run", "--methods", ""}, []string{"methods: empty"}},
		{[]string{"run", "-f", scen}, []string{"repetitions: 0: use 1 to 1000", "streams: 0 parallel streams", "mtus: underlay MTU -1500 out of range"}},
		{[]string{"selfbench", "--rounds", "0"}, []string{"--rounds 0: use 1 to 100"}},
		{[]string{"selfbench", "--rounds", "-1"}, []string{"--rounds -1: use 1 to 100"}},
		{[]string{"selfbench", "--duration", "0s"}, []string{"--duration 0s: use whole seconds from 1s to 1h"}},
		{[]string{"selfbench", "--duration", "1500ms"}, []string{"--duration 1.5s: use whole seconds"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if tt.args[0] == "selfbench" {
				// selfbench has no --db; it must still refuse before it
				// builds anything.
				before := localns.NamespacesCreated()
				code, _, stderr := run(t, tt.args...)
				if code == 0 || !strings.Contains(stderr, tt.want[0]) {
					t.Errorf("exit %d, stderr %q; want an error containing %q", code, stderr, tt.want[0])
				}
				if n := localns.NamespacesCreated() - before; n != 0 {
					t.Errorf("selfbench created %d namespaces before refusing", n)
				}
				return
			}
			refused(t, tt.args, tt.want...)
		})
	}
}

// TestMethodsOptionsCommand lists a method's declared options.
func TestMethodsOptionsCommand(t *testing.T) {
	code, out, stderr := run(t, "methods", "--options", "ipsec-ecmp")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"tunnels", "1 to 8", "cipher", "aes256gcm | chacha20poly1305", "datapath"} {
		if !strings.Contains(out, w) {
			t.Errorf("methods --options ipsec-ecmp lacks %q:\n%s", w, out)
		}
	}
	if code, out, _ := run(t, "methods", "--options", "native"); code != 0 || !strings.Contains(out, "native takes no options") {
		t.Errorf("methods --options native: exit %d, %q", code, out)
	}
	if code, _, stderr := run(t, "methods", "--options", "vxlna"); code == 0 || !strings.Contains(stderr, `unknown method "vxlna"`) {
		t.Errorf("methods --options vxlna: exit %d, %q", code, stderr)
	}
}

// TestMethodsDocListsOptions keeps the options table of docs/methods.md
// equal to the declarations (go test ./internal/cli -run
// TestMethodsDocListsOptions -update-docs rewrites it).
func TestMethodsDocListsOptions(t *testing.T) {
	generatedBlock(t, "../../docs/methods.md", "options", "TestMethodsDocListsOptions", optionsMarkdown(registry.Builtin()), "the options table")
}

// generatedBlock keeps the block of the document path between the
// markers "<!-- NAME: begin (generated ...; go test ./internal/cli -run
// TEST -update-docs) -->" and "<!-- NAME: end -->" equal to want: what,
// when it differs, it rewrites with -update-docs.
func generatedBlock(t *testing.T, path, name, test, want, what string) {
	t.Helper()
	begin := "<!-- " + name + ": begin (generated from the declarations; go test ./internal/cli -run " + test + " -update-docs) -->\n"
	end := "<!-- " + name + ": end -->\n"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q and %q", path, begin, end)
	}
	got := doc[i+len(begin) : j]
	if got == want {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: %s differs from the methods' declarations; run with -update-docs.\ngot:\n%s\nwant:\n%s", path, what, got, want)
}

// TestSSHUnderlayFamilyRefused: srv6 carries every family over IPv6, so a
// site without an IPv6 underlay address is refused before any host is
// reached, naming the site, the field and the fix; and a run that asks
// for IPv6 traffic names the family. (The scenario's hosts do not exist:
// a run that got past validation would fail to reach them instead.)
func TestSSHUnderlayFamilyRefused(t *testing.T) {
	for _, tc := range []struct {
		name, methods, families, site1 string
		want                           []string
	}{
		{"srv6 over ipv4 sites", "[native, srv6]", "[ipv4]", "ipv4: 198.18.9.2/24",
			[]string{"ssh.sites[1].ipv6: empty", "srv6 runs over an ipv6 underlay whatever it carries", "on site b", "or drop srv6 from methods"}},
		{"ipv6 traffic, ipv4 site", "[native]", "[ipv4, ipv6]", "ipv4: 198.18.9.2/24",
			[]string{"ssh.sites[1].ipv6: empty, but families lists ipv6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := fmt.Sprintf(`testbed: ssh
methods: %s
families: %s
ssh:
  sites:
    - {name: a, address: 198.18.9.101, dev: eth1, ipv4: 198.18.9.1/24, ipv6: "2001:2:9::1/64"}
    - {name: b, address: 198.18.9.102, dev: eth1, %s}
`, tc.methods, tc.families, tc.site1)
			path := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			refused(t, []string{"run", "-f", path}, tc.want...)
		})
	}
}
