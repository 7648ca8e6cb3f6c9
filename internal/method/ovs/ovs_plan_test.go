package ovs_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/ovs"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
	"github.com/vishvananda/netlink"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the recorded set-ups")

// addrMove and movedAddrs have the fields of the ovs address ops'
// arguments and result (gob matches them by name).
type addrMove struct {
	From, To string
	Addrs    []netlink.Addr
	Routes   []testbed.JournalRoute
}

type movedAddrs struct {
	Addrs  []netlink.Addr
	Routes []testbed.JournalRoute
}

// answerOVS makes r behave as a host where ovsdb-server and ovs-vswitchd
// start, accept their sockets, create the bridges' internal ports with
// the MTU asked for (and remove them at "exit --cleanup"), and list every
// interface as up; ping answers; the underlay's address moves to br-phy
// and back (ops answered, written as lines).
func answerOVS(r *testbedtest.Recorder, env *method.Env, ep *testbed.Endpoint) {
	r.SetFile("/proc/sys/net/ipv4/conf/"+ep.Dev+"/arp_ignore", []byte("0\n"))
	testbedtest.AnswerOp(r, "unix.accepts", func(string) (string, bool, error) { return "", true, nil })
	testbedtest.AnswerOp(r, "journal.apply", func(a struct{ Name string }) (string, string, error) {
		return "journal apply " + a.Name, "", nil
	})
	addr := ep.Addr(env.Family)
	bits := 24
	if addr.Is6() {
		bits = 64
	}
	under := netlink.Addr{IPNet: testbed.PrefixNet(netip.PrefixFrom(addr, bits))}
	testbedtest.AnswerOp(r, "ovs.move-addrs", func(a addrMove) (string, movedAddrs, error) {
		return fmt.Sprintf("ovs move-addrs %s -> %s: %s", a.From, a.To, under.IPNet), movedAddrs{Addrs: []netlink.Addr{under}}, nil
	})
	testbedtest.AnswerOp(r, "ovs.restore-addrs", func(a addrMove) (string, struct{}, error) {
		return fmt.Sprintf("ovs restore-addrs %s -> %s: %d addresses", a.From, a.To, len(a.Addrs)), struct{}{}, nil
	})
	integ, phy := env.Prefix+"-ovs", env.Prefix+"-phy"
	r.AnswerCommands(func(argv []string) testbedtest.Answer {
		switch {
		case slices.Contains([]string{"ovsdb-server", "ovs-vswitchd"}, argv[0]):
			return testbedtest.Answer{Runs: true}
		case argv[0] == "ovs-vsctl" && slices.Contains(argv, "add-br"):
			for _, br := range []struct {
				name string
				mtu  int
			}{{integ, env.OverlayMTU}, {phy, env.UnderlayMTU}} {
				if slices.Contains(argv, br.name) {
					_ = r.Know(br.name, "tun")
					_ = r.KnowMTU(br.name, br.mtu)
				}
			}
		case argv[0] == "ovs-vsctl" && slices.Contains(argv, "Interface") && slices.Contains(argv, "list"):
			type row = []any
			data := []row{}
			for _, n := range []string{integ, phy, env.Prefix + "-tun", ep.Dev} {
				data = append(data, row{n, 1, []any{"set", []any{}}})
			}
			out, _ := json.Marshal(map[string]any{"headings": []string{"name", "ofport", "error"}, "data": data})
			return testbedtest.Answer{Output: string(out)}
		case argv[0] == "ovs-appctl" && slices.Contains(argv, "exit"):
			r.Forget(integ)
			r.Forget(phy)
		}
		return testbedtest.Answer{}
	})
}

// TestOVSPlans sets every ovs method up on the userspace datapath and
// tears it down on two recording endpoints, with one tunnel and with
// three (the tunnels dimension: two more tunnel ports with their keys,
// no-flood, flows and addresses), in each family, and compares what it
// did with testdata/<method>-<family>[-tunnels3].golden (rewrite with
// -update), and ovs-vxlan with tunnels=flows at three. The daemons are
// not run (answerOVS).
func TestOVSPlans(t *testing.T) {
	t.Parallel()
	for i, m := range ovsMethods() {
		for _, family := range m.Families() {
			for _, n := range []int{1, 3} {
				name := m.Name() + "-" + family
				if n > 1 {
					name += fmt.Sprintf("-tunnels%d", n)
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					// A method value of its own: a method keeps its runs by
					// Env.Dir, which every recorded set-up shares.
					m := ovsMethods()[i]
					rec := methodtest.RecordEnv(m, family, map[string]string{"datapath": ovs.OVSNetdev})
					rec.Env.Tunnels = n
					answerOVS(rec.A, rec.Env, rec.Env.A)
					answerOVS(rec.B, rec.Env, rec.Env.B)
					lines := methodtest.Record(t, m, rec)
					testbedtest.Golden(t, name, lines, *update)
				})
			}
		}
	}
	// tunnels=flows: the key=flow port and each tunnel's flows.
	for _, family := range []string{method.IPv4, method.IPv6} {
		name := "ovs-vxlan-" + family + "-tunnels3-flows"
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := ovs.NewOVSVXLAN()
			rec := methodtest.RecordEnv(m, family, map[string]string{"datapath": ovs.OVSNetdev, "tunnels": "flows"})
			rec.Env.Tunnels = 3
			answerOVS(rec.A, rec.Env, rec.Env.A)
			answerOVS(rec.B, rec.Env, rec.Env.B)
			testbedtest.Golden(t, name, methodtest.Record(t, m, rec), *update)
		})
	}
}
