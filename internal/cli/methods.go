package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/bed"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/runner"
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

// here reports whether testbed name runs on this machine's namespaces
// (the local testbed, whose readiness "tunbench methods" reports).
func here(name string) bool {
	e, ok := testbeds.Named(name)
	return ok && e.Local
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
		if beds, why := method.Testbeds(m); beds != nil && !slices.ContainsFunc(beds, here) {
			// Not on this machine's testbed.
			s.Ready = false
			s.Reason = fmt.Sprintf("%s: testbed %s (docs/%s.md)", why, strings.Join(beds, " or "), beds[0])
		}
		out = append(out, s)
	}
	return out
}

func newMethodsCmd(env bed.Env) *cobra.Command {
	var asJSON bool
	var options string
	cmd := &cobra.Command{
		Use:   "methods",
		Short: "List every method, whether it can run here, and if not why",
		Long: `List every tunnelling and encryption method: its implementation, its
per-packet overhead in bytes for IPv4 and IPv6, and whether this machine can
run it. When it cannot, the reason names the missing kernel option (such a
method still runs in the kernel lab: --testbed vm) or the missing program
with the command that installs it.`,
		Example: `  tunbench methods
  tunbench methods --options ipsec      # the options ipsec takes, what one of its tunnels is, its maximum
  tunbench methods --options all --json
  tunbench methods --options all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if options != "" {
				return printOptions(cmd.OutOrStdout(), registry.Builtin(), options, asJSON)
			}
			st := methodStatuses(registry.Builtin(), env.Probe())
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
	cmd.Flags().StringVar(&options, "options", "", "list the options METHOD takes (name, values, default, help), what one of its tunnels is and how many it sets up (--tunnels) and why, or of all methods")
	return cmd
}

// optionStatus is one option of "tunbench methods --options".
type optionStatus struct {
	Method  string   `json:"method"`
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Values  []string `json:"values,omitempty"`
	Min     *uint64  `json:"min,omitempty"`
	Max     *uint64  `json:"max,omitempty"`
	Default string   `json:"default"`
	Help    string   `json:"help"`
}

// declaredOptions lists the options of the method called name, or of
// every method for "all".
func declaredOptions(reg *method.Registry, name string) ([]optionStatus, error) {
	ms := reg.All()
	if name != "all" {
		m, err := reg.Get(name)
		if err != nil {
			return nil, fmt.Errorf("--options: %w (or all)", err)
		}
		ms = []method.Method{m}
	}
	var out []optionStatus
	for _, m := range ms {
		for _, o := range m.Options() {
			s := optionStatus{Method: m.Name(), Name: o.Name, Type: o.Type(), Values: o.Values, Default: o.Default, Help: o.Help}
			if o.Values == nil {
				s.Min, s.Max = &o.Min, &o.Max
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// scaleStatus is what one tunnel of a method is and how many it sets up
// (method.Scaler), in the families listed: "tunbench methods --options"
// shows one row per method, or one per family when they differ.
type scaleStatus struct {
	Method   string   `json:"method"`
	Families []string `json:"families"`
	Unit     string   `json:"unit"`
	Max      int      `json:"max"`
	Why      string   `json:"why"`
}

// declaredScales lists the scale of the method called name, or of every
// method for "all", with its default options.
func declaredScales(reg *method.Registry, name string) ([]scaleStatus, error) {
	ms := reg.All()
	if name != "all" {
		m, err := reg.Get(name)
		if err != nil {
			return nil, fmt.Errorf("--options: %w (or all)", err)
		}
		ms = []method.Method{m}
	}
	var out []scaleStatus
	for _, m := range ms {
		opts, err := method.ParseOptions(m, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: default options: %w", m.Name(), err)
		}
		first := len(out)
		for _, f := range m.Families() {
			sc := method.ScaleOf(m, f, opts)
			if i := slices.IndexFunc(out[first:], func(s scaleStatus) bool {
				return s.Unit == sc.Unit && s.Max == sc.Max && s.Why == sc.Why
			}); i >= 0 {
				out[first+i].Families = append(out[first+i].Families, f)
				continue
			}
			out = append(out, scaleStatus{Method: m.Name(), Families: []string{f}, Unit: sc.Unit, Max: sc.Max, Why: sc.Why})
		}
	}
	return out, nil
}

// optionsJSON is "tunbench methods --options --json": the options and
// what one tunnel is.
type optionsJSON struct {
	Options []optionStatus `json:"options"`
	Tunnels []scaleStatus  `json:"tunnels"`
}

func printOptions(w io.Writer, reg *method.Registry, name string, asJSON bool) error {
	opts, err := declaredOptions(reg, name)
	if err != nil {
		return err
	}
	scales, err := declaredScales(reg, name)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if opts == nil {
			opts = []optionStatus{}
		}
		return enc.Encode(optionsJSON{Options: opts, Tunnels: scales})
	}
	if len(opts) == 0 {
		if _, err := fmt.Fprintf(w, "%s takes no options\n", name); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "METHOD\tOPTION\tVALUES\tDEFAULT\tHELP")
		for _, o := range opts {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.Method, o.Name, optionValues(o), o.Default, o.Help)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if err := printScales(w, scales); err != nil {
		return err
	}
	return printListens(w, reg, name)
}

// printScales prints declaredScales' rows.
func printScales(w io.Writer, scales []scaleStatus) error {
	fmt.Fprintln(w, "\nTunnels between the endpoints (--tunnels; default options; docs/scale.md):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METHOD\tFAMILIES\tONE TUNNEL IS ONE\tMAX\tWHY")
	for _, s := range scales {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Method, strings.Join(s.Families, ", "), s.Unit, s.Max, s.Why)
	}
	return tw.Flush()
}

// listenRow is one socket a method opens, as "tunbench methods --options"
// and docs/ssh.md show it: with the method's default options and, for
// the address, the measured family's.
type listenRow struct {
	Method, Side, Proto, Port, Addr, Program, Why string
}

// declaredListens lists the sockets the method called name (or every
// method, for "all") opens with its default options; none names the
// methods that declare no socket, undeclared those that do not declare
// their sockets (method.Listener).
func declaredListens(reg *method.Registry, name string) (rows []listenRow, none, undeclared []string, err error) {
	ms := reg.All()
	if name != "all" {
		m, err := reg.Get(name)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--options: %w (or all)", err)
		}
		ms = []method.Method{m}
	}
	for _, m := range ms {
		opts, err := method.ParseOptions(m, nil)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: default options: %w", m.Name(), err)
		}
		ls, ok := method.ListensOf(m, opts, m.Families()[0])
		if !ok {
			undeclared = append(undeclared, m.Name())
			continue
		}
		if len(ls) == 0 {
			none = append(none, m.Name())
		}
		for _, l := range ls {
			side := l.Side
			if side == "" {
				side = "a, b"
			}
			port := "any (the kernel picks)"
			switch {
			case l.Port != 0 && l.PortOption != "":
				port = strconv.Itoa(l.Port) + " (option " + l.PortOption + ")"
			case l.Port != 0:
				port = strconv.Itoa(l.Port)
			case l.PortOption != "":
				port = "option " + l.PortOption + " (default: a free one the kernel picks)"
			}
			addr := l.Addr
			switch {
			case l.Addr == method.ListenUnderlay:
				addr = "underlay (the site's address)"
			case l.Addr == method.ListenOverlay:
				addr = "overlay (the tunnel's address)"
			case l.Addr == method.ListenWildcard && l.Families == "both":
				addr = "wildcard: 0.0.0.0 and ::"
			case l.Addr == method.ListenWildcard:
				addr = "wildcard: 0.0.0.0 or ::, the run's family only"
			}
			rows = append(rows, listenRow{Method: m.Name(), Side: side, Proto: l.Proto, Port: port, Addr: addr, Program: l.Program, Why: l.Why})
		}
	}
	return rows, none, undeclared, nil
}

// printListens prints the sockets of declaredListens.
func printListens(w io.Writer, reg *method.Registry, name string) error {
	rows, none, undeclared, err := declaredListens(reg, name)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nSockets a run opens (default options; docs/ssh.md, \"Ports a run opens\"):")
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "METHOD\tSIDE\tPROTO\tPORT\tADDRESS\tPROGRAM")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Method, r.Side, r.Proto, r.Port, r.Addr, r.Program)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, r := range rows {
			if r.Why != "" && !seen[r.Method+r.Why] {
				seen[r.Method+r.Why] = true
				fmt.Fprintf(w, "  %s: %s\n", r.Method, r.Why)
			}
		}
	}
	if len(none) > 0 {
		fmt.Fprintf(w, "  none: %s\n", strings.Join(none, ", "))
	}
	if len(undeclared) > 0 {
		fmt.Fprintf(w, "  not declared yet: %s\n", strings.Join(undeclared, ", "))
	}
	return nil
}

// listensMarkdown is the table of docs/ssh.md's "Ports a run opens",
// generated from the declarations (TestSSHDocListsPorts keeps the file in
// step).
func listensMarkdown(reg *method.Registry) string {
	rows, none, undeclared, _ := declaredListens(reg, "all")
	var b strings.Builder
	b.WriteString("| method | side | proto | port | address | program | why not the underlay address |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		why := r.Why
		if why == "" {
			why = "-"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Method, r.Side, r.Proto, r.Port, r.Addr, r.Program, why)
	}
	fmt.Fprintf(&b, "\nNo socket: %s. Not declared yet: %s.\n", strings.Join(none, ", "), strings.Join(undeclared, ", "))
	b.WriteString("\nThe load's own servers, on side b at b's address of the path (the tunnel's; native's is the underlay address), each while its test runs:\n\n")
	b.WriteString("| proto | port | server: tests |\n|---|---|---|\n")
	for _, l := range runner.LoadListens() {
		fmt.Fprintf(&b, "| %s | %d | %s |\n", l.Proto, l.Port, l.Program)
	}
	return b.String()
}

func optionValues(o optionStatus) string {
	if o.Values != nil {
		return strings.Join(o.Values, " | ")
	}
	return fmt.Sprintf("%d to %d", *o.Min, *o.Max)
}

// optionsMarkdown is the options table of docs/methods.md, generated from
// the declarations (TestMethodsDocListsOptions keeps the file in step).
func optionsMarkdown(reg *method.Registry) string {
	opts, _ := declaredOptions(reg, "all")
	var b strings.Builder
	b.WriteString("| method | option | values | default | what it sets |\n|---|---|---|---|---|\n")
	for _, o := range opts {
		vals := optionValues(o)
		if o.Values != nil {
			vals = "`" + strings.Join(o.Values, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | `%s` | %s |\n", o.Method, o.Name, vals, o.Default, o.Help)
	}
	return b.String()
}

func bytesOrDash(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
