package fou_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/fou"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the recorded set-ups")

func methods() []method.Method { return []method.Method{fou.FOU{}, fou.GUE{}} }

var payloads = []string{fou.PayloadIPIP, fou.PayloadGRE}

// TestOverhead checks the arithmetic of each overhead: outer IP (20/40),
// UDP 8, GUE 4 (gue), GRE 4 (payload gre); Overhead is payload gre's.
func TestOverhead(t *testing.T) {
	for _, tt := range []struct {
		m               method.Method
		family, payload string
		want            int
	}{
		{fou.FOU{}, method.IPv4, "ipip", 28},
		{fou.FOU{}, method.IPv4, "gre", 32},
		{fou.FOU{}, method.IPv6, "ipip", 48},
		{fou.FOU{}, method.IPv6, "gre", 52},
		{fou.GUE{}, method.IPv4, "ipip", 32},
		{fou.GUE{}, method.IPv4, "gre", 36},
		{fou.GUE{}, method.IPv6, "ipip", 52},
		{fou.GUE{}, method.IPv6, "gre", 56},
	} {
		got := method.HeaderOverhead(tt.m, tt.family, map[string]string{"payload": tt.payload}, "")
		if got != tt.want {
			t.Errorf("%s %s payload %s: %d bytes, want %d", tt.m.Name(), tt.family, tt.payload, got, tt.want)
		}
		if tt.payload == "gre" && tt.m.Overhead(tt.family) != tt.want {
			t.Errorf("%s %s: Overhead %d, want payload gre's %d", tt.m.Name(), tt.family, tt.m.Overhead(tt.family), tt.want)
		}
	}
	if got := method.HeaderOverhead(fou.FOU{}, method.IPv4, nil, ""); got != 28 {
		t.Errorf("fou default payload: %d bytes, want ipip's 28", got)
	}
}

// TestOptionsRefused: a bad payload, port or option name is refused
// before anything is created, naming the option and what it accepts (a
// nil testbed is fine: nothing is touched).
func TestOptionsRefused(t *testing.T) {
	for _, m := range methods() {
		for _, tt := range []struct {
			opts map[string]string
			want string
		}{
			{map[string]string{"payload": "gretap"}, `option payload="gretap": want one of ipip, gre`},
			{map[string]string{"payload": ""}, `option payload="": want one of ipip, gre`},
			{map[string]string{"port": "0"}, `option port="0": want an integer from 1 to 65535`},
			{map[string]string{"port": "65536"}, `option port="65536": want an integer from 1 to 65535`},
			{map[string]string{"encap": "gue"}, `unknown option "encap": valid options are payload, port`},
		} {
			env := &method.Env{Family: method.IPv4, Options: tt.opts}
			_, err := m.Setup(context.Background(), env)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), m.Name()+": ") {
				t.Errorf("%s %v: Setup error %v, want one containing %q", m.Name(), tt.opts, err, tt.want)
			}
			if err := m.Teardown(context.Background(), env); err != nil {
				t.Errorf("%s %v: Teardown after refused options: %v", m.Name(), tt.opts, err)
			}
		}
	}
}

// ip6greArgs has the fields of the fou.add-ip6gre op's arguments (gob
// matches them by name).
type ip6greArgs struct {
	Name                  string
	Local, Remote         netip.Addr
	EncapType, EncapDport uint16
	Key                   uint32
}

// answerOps makes r answer the package's ops as ip(8) would be asked.
func answerOps(r *testbedtest.Recorder) {
	testbedtest.AnswerOp(r, "fou.open-port", func(p fou.Port) (string, struct{}, error) {
		return "ip fou add " + p.String(), struct{}{}, nil
	})
	testbedtest.AnswerOp(r, "fou.close-port", func(p fou.Port) (string, struct{}, error) {
		line := fmt.Sprintf("ip fou del port %d", p.Port)
		if p.Family == method.IPv6 {
			line += " -6"
		}
		return line, struct{}{}, nil
	})
	testbedtest.AnswerOp(r, "fou.add-ip6gre", func(a ip6greArgs) (string, struct{}, error) {
		line := fmt.Sprintf("ip link add %s type ip6gre local %s remote %s ttl 64 encaplimit none encap %s encap-sport auto encap-dport %d noencap-csum",
			a.Name, a.Local, a.Remote, map[uint16]string{1: "fou", 2: "gue"}[a.EncapType], a.EncapDport)
		if a.Key != 0 {
			line += fmt.Sprintf(" key %d", a.Key)
		}
		return line, struct{}{}, r.Know(a.Name, "ip6gre")
	})
}

// TestPlans sets fou and gue up and tears them down on two recording
// endpoints, in each family with each payload (and gue on another port),
// and compares what they did to each host, as ip-style lines, with
// testdata/<method>-<family>-<payload>.golden (rewrite with -update). It
// needs no root and no FOU in the kernel; the lab proves the data path.
func TestPlans(t *testing.T) {
	t.Parallel()
	type tc struct {
		name string
		m    method.Method
		fam  string
		opts map[string]string
	}
	var cases []tc
	for _, m := range methods() {
		for _, fam := range m.Families() {
			for _, p := range payloads {
				cases = append(cases, tc{m.Name() + "-" + fam + "-" + p, m, fam, map[string]string{"payload": p}})
			}
		}
	}
	cases = append(cases, tc{"gue-ipv4-gre-port6635", fou.GUE{}, method.IPv4, map[string]string{"payload": "gre", "port": "6635"}})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rec := methodtest.RecordEnv(c.m, c.fam, c.opts)
			answerOps(rec.A)
			answerOps(rec.B)
			testbedtest.Golden(t, c.name, methodtest.Record(t, c.m, rec), *update)
		})
	}
}

// TestRefusalsRecorded: on a kernel without FOU (Env.Faults), Setup fails
// with ErrNotSupported naming CONFIG_NET_FOU before anything is created,
// and Teardown succeeds; without root, on any kernel.
func TestRefusalsRecorded(t *testing.T) {
	t.Parallel()
	for _, m := range methods() {
		for _, fam := range m.Families() {
			t.Run(m.Name()+"-"+fam, func(t *testing.T) {
				rec := methodtest.RecordEnv(m, fam, nil)
				answerOps(rec.A)
				answerOps(rec.B)
				rec.Env.Faults = &method.Faults{KernelLacks: []string{"CONFIG_NET_FOU"}}
				_, err := m.Setup(t.Context(), rec.Env)
				if !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks CONFIG_NET_FOU") {
					t.Errorf("Setup error %v, want ErrNotSupported naming CONFIG_NET_FOU", err)
				}
				if lines := append(rec.A.Lines(), rec.B.Lines()...); len(lines) != 0 {
					t.Errorf("a refused Setup changed the hosts: %q", lines)
				}
			})
		}
	}
}

// TestNotSupportedHere runs Setup on real namespaces of this host: where
// the kernel lacks FOU (this development machine), the kernel's own
// answer (no generic netlink family "fou") must be ErrNotSupported naming
// CONFIG_NET_FOU, with nothing left behind; where it has FOU, the refusal
// is faked (Env.Faults) so the path still runs.
func TestNotSupportedHere(t *testing.T) {
	testbedtest.RequireNetAdmin(t)
	cfg, cfgErr := hostinfo.LoadKernelConfig()
	fake := cfgErr != nil || hostinfo.HasKernelFeature(cfg, "CONFIG_NET_FOU")
	for _, m := range methods() {
		for _, fam := range m.Families() {
			t.Run(m.Name()+"/"+fam, func(t *testing.T) {
				t.Parallel()
				l := testbedtest.New(t, 1500)
				env := &method.Env{A: l.A, B: l.B, Family: fam, UnderlayMTU: 1500,
					OverlayMTU: 1500 - m.Overhead(fam), Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir}
				if fake {
					env.Faults = &method.Faults{KernelLacks: []string{"CONFIG_NET_FOU"}}
					t.Log("this kernel has CONFIG_NET_FOU (or no readable config): its refusal is faked")
				}
				before := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}
				_, err := m.Setup(context.Background(), env)
				if !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks CONFIG_NET_FOU") {
					t.Errorf("Setup error %v, want ErrNotSupported naming CONFIG_NET_FOU", err)
				}
				if err := m.Teardown(context.Background(), env); err != nil {
					t.Errorf("Teardown after failed Setup: %v", err)
				}
				if after := [][]string{methodtest.LinkState(t, l.A), methodtest.LinkState(t, l.B)}; fmt.Sprint(after) != fmt.Sprint(before) {
					t.Errorf("links after a refused Setup %v, want %v", after, before)
				}
				checkNothingLeft(t, l.Dir, l.A, l.B)
			})
		}
	}
}

// checkNothingLeft fails t when a side still has a FOU or GUE port or the
// run directory dir still journals one.
func checkNothingLeft(t *testing.T, dir string, eps ...*testbed.Endpoint) {
	t.Helper()
	for _, ep := range eps {
		ports, err := fou.ListPorts(ep)
		if err != nil {
			t.Errorf("%s: list fou ports: %v", ep.Side, err)
		}
		if len(ports) != 0 {
			t.Errorf("%s: fou ports left: %v", ep.Side, ports)
		}
		for _, fam := range []string{method.IPv4, method.IPv6} {
			for _, port := range []int{fou.DefaultPort, 6635} {
				name := fmt.Sprintf("fou-%s-%s-%d", ep.Side, fam, port)
				if dir != "" && testbed.HasUndo(dir, name) {
					t.Errorf("%s: journal entry %s left", ep.Side, name)
				}
			}
		}
	}
}
