package ipsec_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ipsec"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the recorded set-ups")

// answerCharon makes r answer strongSwan: charon (started through
// unshare) runs and accepts on its vici socket, swanctl loads and
// initiates, and lists the CHILD_SAs of listSAs (swanctl's output) as
// INSTALLED; ip (nexthops) succeeds; kernel-libipsec can run and each
// charon holds a TUN device (ipsec0, ipsec1...); the multipath hash
// policy is 0.
func answerCharon(t *testing.T, r *testbedtest.Recorder, listSAs string) {
	for _, fam := range []string{"ipv4", "ipv6"} {
		r.SetFile("/proc/sys/net/"+fam+"/fib_multipath_hash_policy", []byte("0\n"))
	}
	r.AnswerCommands(func(argv []string) testbedtest.Answer {
		switch {
		case argv[0] == "ip":
			return testbedtest.Answer{}
		case argv[0] == "unshare" && slices.Contains(argv, "/usr/lib/ipsec/charon"):
			return testbedtest.Answer{Runs: true}
		case argv[0] == "swanctl" && slices.Contains(argv, "--list-sas"):
			return testbedtest.Answer{Output: listSAs}
		case argv[0] == "swanctl":
			return testbedtest.Answer{}
		}
		return testbedtest.Answer{Err: fmt.Errorf("unexpected command %q", argv)}
	})
	testbedtest.AnswerOp(r, "unix.accepts", func(string) (string, bool, error) { return "", true, nil })
	testbedtest.AnswerOp(r, "ipsec.libipsec-problem", func(struct{}) (string, string, error) { return "", "", nil })
	// Each charon's TUN device: ipsec0, ipsec1... in the order charons ask.
	tuns := map[int]string{}
	testbedtest.AnswerOp(r, "ipsec.tun-of", func(pid int) (string, string, error) {
		if _, ok := tuns[pid]; !ok {
			tuns[pid] = fmt.Sprintf("ipsec%d", len(tuns))
			if err := r.Know(tuns[pid], "tun"); err != nil {
				t.Error(err)
			}
		}
		return "", tuns[pid], nil
	})
}

// TestIPsecPlans sets ipsec up and tears it down on two recording
// endpoints, and compares what it did to each host with
// testdata/ipsec-<variant>-<family>.golden (rewrite with -update): the
// xfrm probe SA, the overlay addresses or transport routes, charon and
// its configuration files, swanctl's load and initiate, and what teardown
// removes. Variants: the xfrm data path in tunnel and in transport mode,
// and kernel-libipsec (a kernel without ESP, Env.Faults). charon's own
// SAs and routes are its business: the integration tests and the lab
// check them.
func TestIPsecPlans(t *testing.T) {
	t.Parallel()
	listSAs, err := os.ReadFile("testdata/ipsec_list_sas_libipsec_v6_a.txt")
	if err != nil {
		t.Fatal(err)
	}
	noESP := &method.Faults{KernelLacks: []string{"CONFIG_INET_ESP", "CONFIG_INET6_ESP"}}
	for _, tt := range []struct {
		variant string
		opts    map[string]string
		faults  *method.Faults
	}{
		{"xfrm", nil, nil},
		{"transport", map[string]string{"mode": "transport"}, nil},
		{"libipsec", nil, noESP},
	} {
		for _, family := range []string{method.IPv4, method.IPv6} {
			t.Run(tt.variant+"-"+family, func(t *testing.T) {
				t.Parallel()
				m := ipsec.NewIPsec()
				rec := methodtest.RecordEnv(m, family, tt.opts)
				rec.Env.Faults = tt.faults
				answerCharon(t, rec.A, string(listSAs))
				answerCharon(t, rec.B, string(listSAs))
				testbedtest.Golden(t, "ipsec-"+tt.variant+"-"+family, methodtest.Record(t, m, rec), *update)
			})
		}
	}
}

// TestIPsecECMPPlans is TestIPsecPlans for ipsec-ecmp with two tunnels:
// xfrm interfaces (xfrm) or one charon per tunnel (kernel-libipsec), and
// the ECMP nexthop group over them.
func TestIPsecECMPPlans(t *testing.T) {
	t.Parallel()
	listSAs, err := os.ReadFile("testdata/ipsec_list_sas_xfrm_ecmp.txt")
	if err != nil {
		t.Fatal(err)
	}
	noESP := &method.Faults{KernelLacks: []string{"CONFIG_INET_ESP", "CONFIG_INET6_ESP"}}
	for _, tt := range []struct {
		variant string
		faults  *method.Faults
	}{
		{"xfrm", nil},
		{"libipsec", noESP},
	} {
		for _, family := range []string{method.IPv4, method.IPv6} {
			t.Run(tt.variant+"-"+family, func(t *testing.T) {
				t.Parallel()
				m := ipsec.NewIPsecECMP()
				rec := methodtest.RecordEnv(m, family, nil)
				rec.Env.Faults = tt.faults
				answerCharon(t, rec.A, string(listSAs))
				answerCharon(t, rec.B, string(listSAs))
				testbedtest.Golden(t, "ipsec-ecmp-"+tt.variant+"-"+family, methodtest.Record(t, m, rec), *update)
			})
		}
	}
}

// TestIPsecTunnelsPlans is TestIPsecPlans with three tunnels
// (Env.Tunnels), testdata/ipsec-[libipsec-]<family>-tunnels3.golden: the
// measured CHILD_SA (the middle one) keeps the single tunnel's name and
// addresses, the two others get addresses of the scale blocks on lo; all
// have a section in swanctl.conf and are initiated one by one in index
// order, the first with the IKE_SA, and both charons are asked that all
// three are installed (the canned list-sas lists tunbench, t0 and t2);
// teardown removes every address.
func TestIPsecTunnelsPlans(t *testing.T) {
	t.Parallel()
	listSAs, err := os.ReadFile("testdata/ipsec_list_sas_tunnels3.txt")
	if err != nil {
		t.Fatal(err)
	}
	noESP := &method.Faults{KernelLacks: []string{"CONFIG_INET_ESP", "CONFIG_INET6_ESP"}}
	for _, tt := range []struct {
		variant string
		faults  *method.Faults
	}{
		{"", nil},
		{"libipsec-", noESP},
	} {
		for _, family := range []string{method.IPv4, method.IPv6} {
			t.Run(tt.variant+family, func(t *testing.T) {
				t.Parallel()
				m := ipsec.NewIPsec()
				rec := methodtest.RecordEnv(m, family, nil)
				rec.Env.Faults = tt.faults
				rec.Env.Tunnels = 3
				answerCharon(t, rec.A, string(listSAs))
				answerCharon(t, rec.B, string(listSAs))
				testbedtest.Golden(t, "ipsec-"+tt.variant+family+"-tunnels3", methodtest.Record(t, m, rec), *update)
			})
		}
	}
}
