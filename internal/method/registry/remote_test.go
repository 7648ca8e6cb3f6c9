package registry_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/tunbench/tunbench/internal/testenv"
)

// TestPortableMethodsThroughAgents sets every method of throughAgents up between
// two remote endpoints, each served by a real agent process in its own
// namespace, exactly as over SSH: the method code is unchanged, and every
// command, file, netlink call and op goes through the agent protocol.
// Traffic must flow, and teardown must leave both namespaces and the
// agents' directories as they were.
func TestPortableMethodsThroughAgents(t *testing.T) {
	reg := registry.Builtin()
	for _, m := range reg.All() {
		if !throughAgents[m.Name()] {
			continue
		}
		for _, fam := range m.Families() {
			t.Run(m.Name()+"/"+fam, func(t *testing.T) {
				for _, r := range m.Requirements() {
					if r.Program != "" {
						if _, err := exec.LookPath(r.Program); err != nil {
							testenv.SkipMissing(t, "%s not installed: %s", r.Program, r.Install)
						}
					}
				}
				l, pair, _ := testbedtest.AgentPair(t, 1500)
				env := &method.Env{A: pair.A, B: pair.B, Family: fam, UnderlayMTU: 1500,
					OverlayMTU: 1500 - m.Overhead(fam), Prefix: testbed.DevicePrefix(l.ID), Dir: pair.Dir}
				before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
				ctx := context.Background()
				path, err := m.Setup(ctx, env)
				if err == nil {
					out, perr := pair.A.Run(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "3", path.B.String())
					if perr != nil {
						t.Errorf("ping %s from a through the agent: %v\n%s", path.B, perr, out)
					}
					for _, d := range path.Daemons {
						if d.PID <= 0 {
							t.Errorf("daemon %s on %s has no pid", d.Role, d.Side)
						}
					}
				} else {
					t.Errorf("Setup through agents: %v", err)
				}
				if err := m.Teardown(ctx, env); err != nil {
					t.Errorf("Teardown through agents: %v", err)
				}
				after := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("links after teardown (-before +after):\n%s", diff)
				}
				for _, ep := range pair.Endpoints() {
					entries, _ := os.ReadDir(ep.Dir)
					var names []string
					for _, e := range entries {
						names = append(names, e.Name())
					}
					if len(names) > 0 && !(len(names) == 1 && names[0] == "pids") {
						t.Errorf("%s: left in the agent's directory after teardown: %v", ep.Side, names)
					}
				}
			})
		}
	}
}

// throughAgents are the methods whose host work all goes through the
// endpoint.
var throughAgents = map[string]bool{"native": true, "vxlan": true, "wireguard-go": true, "boringtun": true}
