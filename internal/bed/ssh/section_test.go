package ssh_test

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/bed/registry"
	"github.com/tunbench/tunbench/internal/bed/ssh"
	methods "github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/scenario"
)

// catalog is the scenario's validation as the command line runs it:
// every method and every testbed.
var catalog = registry.Catalog(methods.Builtin())

const sshYAML = `
testbed: ssh
methods: [native, vxlan]
ssh:
  sites:
    - {name: fra, address: 192.0.2.1, dev: eth1, ipv4: 10.0.0.1/24}
    - {name: nyc, address: 192.0.2.2, dev: eth1, ipv4: 10.0.0.2/24}
    - {name: sgp, address: 192.0.2.3, dev: eth1, ipv4: 10.0.0.3/24}
`

func TestSSHScenarioPairs(t *testing.T) {
	s, err := scenario.Parse([]byte(sshYAML))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog); err != nil {
		t.Fatal(err)
	}
	if got := len(s.SitePairs(catalog.(scenario.BedCatalog))); got != 6 {
		t.Errorf("every ordered pair of 3 sites: got %d, want 6", got)
	}
	s = withHosts(t, s, func(x *ssh.Section) { x.Pairs = [][]string{{"fra", "sgp"}} })
	if got := s.SitePairs(catalog.(scenario.BedCatalog)); len(got) != 1 || got[0] != [2]string{"fra", "sgp"} {
		t.Errorf("chosen pairs: %v", got)
	}
}

// TestSSHScenarioRefusals: each bad ssh scenario is refused naming the
// field and the fix.
func TestSSHScenarioRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, edit, want string
	}{
		{"one site", `ssh: {sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24}]}`, "ssh.sites: testbed ssh needs at least two sites"},
		{"no dev", `ssh: {sites: [{name: a, address: x, ipv4: 10.0.0.1/24}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24}]}`, "ssh.sites[0].dev: empty: name the underlay device"},
		{"no address for family", `ssh: {sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24}, {name: b, address: y, dev: e}]}`, "ssh.sites[1].ipv4: empty, but families lists ipv4"},
		{"srv6 without an IPv6 underlay", "methods: [native, srv6]\n" + `ssh: {sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24, ipv6: "2001:db8::1/64"}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24}]}`, "ssh.sites[1].ipv6: empty, but srv6 runs over an ipv6 underlay whatever it carries: give the ipv6 address of e on site b, with its prefix length, or drop srv6 from methods"},
		{"bad prefix", `ssh: {sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24}]}`, "ssh.sites[0].ipv4: \"10.0.0.1\": give the ipv4 address of e with its prefix length"},
		{"duplicate site", `ssh: {sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24}, {name: a, address: y, dev: e, ipv4: 10.0.0.2/24}]}`, "is listed twice"},
		{"unknown pair site", `ssh: {pairs: [[a, c]], sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24}]}`, "ssh.pairs[0]: unknown site \"c\": sites are a, b"},
		{"offloads off", "offloads: [off]\n" + `ssh: {sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24}]}`, "offloads: \"off\": testbed ssh leaves the NIC settings of a, b as they are unless ssh.host_changes is true"},
		{"offloads off, one site without host changes", "offloads: [off]\n" + `ssh: {host_changes: true, sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24, host_changes: false}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24}]}`, "NIC settings of a as they are unless ssh.host_changes"},
		{"control_over_dev without host changes", `ssh: {sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24, control_over_dev: true}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24}]}`, "ssh.sites[0].control_over_dev: set, but the site's device is not changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "testbed: ssh\n" + tc.edit + "\n"
			if !strings.Contains(tc.edit, "methods:") {
				doc += "methods: [native]\n"
			}
			s, err := scenario.Parse([]byte(doc))
			if err == nil {
				err = s.Validate(catalog)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
	s, _ := scenario.Parse([]byte("testbed: local\nssh: {sites: []}\n"))
	if err := s.Validate(catalog); err == nil || !strings.Contains(err.Error(), "ssh: hosts are only used by testbed ssh") {
		t.Errorf("ssh section on the local testbed: %v", err)
	}
}

// TestSSHHostChanges: with host_changes (scenario-wide or per site) a
// scenario may sweep offloads, and ChangesHost says which sites change.
func TestSSHHostChanges(t *testing.T) {
	for _, tc := range []struct {
		name, ssh string
		want      map[string]bool
	}{
		{"scenario-wide", `{host_changes: true, sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24}]}`, map[string]bool{"a": true, "b": true}},
		{"per site", `{sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24, host_changes: true, control_over_dev: true}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24, host_changes: true}]}`, map[string]bool{"a": true, "b": true}},
		{"site opts out, not in a pair", `{host_changes: true, pairs: [[a, b]], sites: [{name: a, address: x, dev: e, ipv4: 10.0.0.1/24}, {name: b, address: y, dev: e, ipv4: 10.0.0.2/24}, {name: c, address: z, dev: e, ipv4: 10.0.0.3/24, host_changes: false}]}`, map[string]bool{"a": true, "b": true, "c": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scenario.Parse([]byte("testbed: ssh\nmethods: [native]\nmtus: [1500, 9000]\noffloads: [on, off]\nssh: " + tc.ssh + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(catalog); err != nil {
				t.Fatalf("refused: %v", err)
			}
			for site, want := range tc.want {
				if got := hostsOf(t, s).ChangesHost(site); got != want {
					t.Errorf("ChangesHost(%s) = %v, want %v", site, got, want)
				}
			}
		})
	}
}

// TestSSHUnderlayFamilies: the addresses a site needs are those of the
// methods' underlay families: srv6 carrying IPv4 needs an IPv6 address,
// and no IPv4 one when nothing else runs over IPv4.
func TestSSHUnderlayFamilies(t *testing.T) {
	s, err := scenario.Parse([]byte(`testbed: ssh
methods: [srv6]
ssh:
  sites:
    - {name: a, address: x, dev: e, ipv6: "2001:db8::1/64"}
    - {name: b, address: y, dev: e, ipv6: "2001:db8::2/64"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog); err != nil {
		t.Errorf("srv6 between IPv6-only sites refused: %v", err)
	}
	s.Methods = []string{"native", "srv6", "ipip"}
	fams, by := s.UnderlayFamilies(catalog)
	if strings.Join(fams, ",") != "ipv4,ipv6" || strings.Join(by["ipv6"], ",") != "srv6" || strings.Join(by["ipv4"], ",") != "native,ipip" {
		t.Errorf("underlay families %v, by method %v", fams, by)
	}
}

// TestRecoverOnSSH: recover takes the sites' own device down, so it needs
// host_changes and refuses control_over_dev.
func TestRecoverOnSSH(t *testing.T) {
	s, err := scenario.Parse([]byte(sshYAML + "tests: [recover]\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Validate(catalog)
	want := "ssh.sites[0]: recover takes fra's underlay device eth1 down and up: set host_changes: true"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("recover without host_changes: %v, want %q", err, want)
	}
	s = withHosts(t, s, func(x *ssh.Section) { x.HostChanges = true })
	if err := s.Validate(catalog); err != nil && strings.Contains(err.Error(), "recover") {
		t.Errorf("recover with host_changes refused: %v", err)
	}
}
