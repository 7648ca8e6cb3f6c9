package scenario_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tunbench/tunbench/internal/scenario"
)

// FuzzParse feeds the decoder any document. It must not panic; a document
// that parses and validates must have sane times and survive the round
// trip through the YAML a run stores.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"methods: [vxlan]\nmtus: [9000]\nrepetitions: 5\n",
		"methods: [native, vxlan]\nfamilies: [ipv4, ipv6]\nmtus: [1500, 9000]\noffloads: [on, off]\nstreams: [1, 4]\n",
		"duration: 3s\nomit: 0s\nlatency: 0s\norder: grouped\npin: true\n",
		"methods: [vxlan]\noptions: {vxlan: {vni: \"7\"}}\n",
		"testbed: vm\nkernel: /boot/vmlinuz\nmodules: /lib/modules/6.1\n",
		"repetitions: 0\nstreams: [0]\n",
		"methods: [vxlan]\nrepetition: 5\n",
		"[1, 2",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scenario.Parse(data)
		if err != nil {
			return
		}
		if err := s.Validate(catalog{}); err != nil {
			return
		}
		d := s.Times()
		if d.Duration < time.Second || d.Omit < 0 || d.Latency < 0 {
			t.Fatalf("valid scenario with times %+v", d)
		}
		back, err := scenario.Parse([]byte(s.YAML()))
		if err != nil {
			t.Fatalf("the stored YAML of a valid scenario does not parse: %v\n%s", err, s.YAML())
		}
		if diff := cmp.Diff(s, back, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}
