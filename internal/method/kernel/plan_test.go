package kernel_test

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the recorded set-ups")

// ip6greArgs has the fields of the kernel.add-ip6gre op's arguments (gob
// matches them by name).
type ip6greArgs struct {
	Kind, Name    string
	Local, Remote netip.Addr
	Key           uint32
}

// answerIP6GRE makes r answer the raw RTM_NEWLINK of ip6gre and
// ip6gretap as "ip link add" does, and know the device afterwards.
func answerIP6GRE(r *testbedtest.Recorder) {
	testbedtest.AnswerOp(r, "kernel.add-ip6gre", func(a ip6greArgs) (string, struct{}, error) {
		line := fmt.Sprintf("ip link add %s type %s local %s remote %s ttl 64 encaplimit none", a.Name, a.Kind, a.Local, a.Remote)
		if a.Key != 0 {
			line += fmt.Sprintf(" key %d", a.Key)
		}
		return line, struct{}{}, r.Know(a.Name, a.Kind)
	})
}

// TestKernelPlans sets every kernel method up and tears it down on two
// recording endpoints, in each family it carries, and compares what it
// did to each host, as ip-style lines, with testdata/<method>-<family>.golden
// (rewrite them with -update). It needs no root and no kernel support:
// the set-up of the tunnels this host's kernel lacks is checked here, the
// lab proves they carry traffic.
func TestKernelPlans(t *testing.T) {
	t.Parallel()
	ms := append([]method.Method{kernel.VXLAN{}, kernel.SRv6{}}, kernelTunnels()...)
	for _, m := range ms {
		for _, family := range m.Families() {
			t.Run(m.Name()+"-"+family, func(t *testing.T) {
				t.Parallel()
				rec := methodtest.RecordEnv(m, family, nil)
				answerIP6GRE(rec.A)
				answerIP6GRE(rec.B)
				testbedtest.Golden(t, m.Name()+"-"+family, methodtest.Record(t, m, rec), *update)
			})
		}
	}
}

// TestKernelRefusalsRecorded: on a kernel without a method's option
// (Env.Faults), Setup fails with ErrNotSupported naming it before any
// device exists, and Teardown succeeds; without root, on any kernel.
func TestKernelRefusalsRecorded(t *testing.T) {
	t.Parallel()
	for _, m := range append([]method.Method{kernel.VXLAN{}}, kernelTunnels()...) {
		for _, family := range m.Families() {
			t.Run(m.Name()+"-"+family, func(t *testing.T) {
				t.Parallel()
				rec := methodtest.RecordEnv(m, family, nil)
				answerIP6GRE(rec.A)
				answerIP6GRE(rec.B)
				var lacks []string
				for _, r := range m.Requirements() {
					lacks = append(lacks, r.Kernel)
				}
				rec.Env.Faults = &method.Faults{KernelLacks: lacks}
				_, err := m.Setup(t.Context(), rec.Env)
				if !errors.Is(err, method.ErrNotSupported) || !strings.Contains(err.Error(), "kernel lacks CONFIG_") {
					t.Errorf("Setup error %v, want ErrNotSupported naming the option", err)
				}
				if lines := append(rec.A.Lines(), rec.B.Lines()...); len(lines) != 0 {
					t.Errorf("a refused Setup changed the hosts: %q", lines)
				}
				if err := m.Teardown(t.Context(), rec.Env); err != nil {
					t.Errorf("Teardown after a refused Setup: %v", err)
				}
			})
		}
	}
}
