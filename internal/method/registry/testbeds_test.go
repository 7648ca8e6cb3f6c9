package registry_test

import (
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"slices"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/scenario"
)

// testbedScenarios are the smallest valid scenarios of every testbed.
var testbedScenarios = map[string]string{
	"local": "testbed: local\n",
	"vm":    "testbed: vm\n",
	"ssh": `testbed: ssh
ssh:
  sites:
    - {name: a, address: 198.18.9.101, dev: eth1, ipv4: 198.18.9.1/24, ipv6: "2001:2:9::1/64"}
    - {name: b, address: 198.18.9.102, dev: eth1, ipv4: 198.18.9.2/24, ipv6: "2001:2:9::2/64"}
`,
	"kubernetes": "testbed: kubernetes\nkubernetes: {nodes: [{name: n1}, {name: n2}]}\n",
}

// TestEveryMethodOnEveryTestbed: every method is either accepted on a
// testbed or refused before anything is created with a reason that names
// the method and the testbed it needs; and a method that says where it
// runs (method.Confined) is accepted exactly there.
func TestEveryMethodOnEveryTestbed(t *testing.T) {
	reg := registry.Builtin()
	cat := testbeds.Catalog(reg)
	for _, m := range reg.All() {
		beds, _ := method.Testbeds(m)
		for bed, doc := range testbedScenarios {
			s, err := scenario.Parse([]byte(doc + "methods: [" + m.Name() + "]\nfamilies: [" + m.Families()[0] + "]\n"))
			if err != nil {
				t.Fatalf("%s on %s: %v", m.Name(), bed, err)
			}
			err = s.Validate(cat)
			want := beds == nil || slices.Contains(beds, bed)
			switch {
			case want && err != nil:
				t.Errorf("%s on testbed %s refused: %v", m.Name(), bed, err)
			case !want && err == nil:
				t.Errorf("%s on testbed %s accepted, though it runs on %v only", m.Name(), bed, beds)
			case !want && (!strings.Contains(err.Error(), m.Name()) || !strings.Contains(err.Error(), "set testbed: "+beds[0])):
				t.Errorf("%s on testbed %s: the refusal names neither the method nor the testbed it needs: %v", m.Name(), bed, err)
			}
		}
	}
}
