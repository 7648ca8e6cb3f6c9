package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/method"
	"golang.org/x/sys/unix"
)

// methodStatus is one line of "tunbench methods".
type methodStatus struct {
	Name           string   `json:"name"`
	Implementation string   `json:"implementation"`
	Families       []string `json:"families"`
	OverheadIPv4   *int     `json:"overhead_ipv4_bytes,omitempty"`
	OverheadIPv6   *int     `json:"overhead_ipv6_bytes,omitempty"`
	Ready          bool     `json:"ready"`
	Reason         string   `json:"reason,omitempty"`
}

func methodStatuses(reg *method.Registry, p method.Probe) []methodStatus {
	var out []methodStatus
	for _, m := range reg.All() {
		s := methodStatus{Name: m.Name(), Implementation: m.Implementation(), Families: m.Families(), Ready: true}
		for _, f := range m.Families() {
			o := m.Overhead(f)
			if f == method.IPv4 {
				s.OverheadIPv4 = &o
			} else {
				s.OverheadIPv6 = &o
			}
		}
		if err := method.Check(p, m.Requirements()); err != nil {
			s.Ready = false
			s.Reason = strings.TrimPrefix(err.Error(), method.ErrNotSupported.Error()+": ")
		}
		out = append(out, s)
	}
	return out
}

func newMethodsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "methods",
		Short: "List every method, whether it can run here, and if not why",
		Long: `List every tunnelling and encryption method: its implementation, its
per-packet overhead in bytes for IPv4 and IPv6, and whether this machine can
run it. When it cannot, the reason names the missing kernel option (such a
method still runs in the kernel lab: --testbed vm) or the missing program
with the command that installs it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st := methodStatuses(method.Builtin(), hostProbe())
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			var uts unix.Utsname
			if unix.Uname(&uts) == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "kernel methods use this kernel, %s; --testbed vm boots another\n\n", unix.ByteSliceToString(uts.Release[:]))
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "METHOD\tOVERHEAD v4/v6 (bytes)\tREADY\tIMPLEMENTATION / REASON")
			for _, s := range st {
				ready, detail := "yes", s.Implementation
				if !s.Ready {
					ready, detail = "no", s.Implementation+"\n\t\t\t  why: "+s.Reason
				}
				fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\n", s.Name, bytesOrDash(s.OverheadIPv4), bytesOrDash(s.OverheadIPv6), ready, detail)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func bytesOrDash(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
