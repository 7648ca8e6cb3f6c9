package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/bed"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"github.com/tunbench/tunbench/internal/ebpf"
)

// readsEBPF says whether "ebpf stats" reads a testbed's endpoints: here
// (local) or on each host.
func readsEBPF(e bed.Entry) bool { return e.Local || e.OnEachSite != nil }

func newEBPFCmd(env bed.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ebpf",
		Short: "Inspect tunbench's own eBPF tunnel data path (ebpf-* methods)",
	}
	var (
		root, name, file string
		max              int
	)
	stats := &cobra.Command{
		Use:   "stats [ENDPOINT...]",
		Short: "Print the per-rule counters of the running ebpf-* endpoints",
		Long: `stats prints, for every endpoint of a running ebpf-* method (its maps are
pinned under ` + ebpf.PinRoot + `/<prefix>-<side>), each rule (destination
prefix, remote underlay address, encapsulation, VNI or key) and each decap
entry with its packets, bytes and drops by reason, the drops no rule
owns (truncated headers), and the tunnel packets that were not tunbench's
(a VNI or key with no decap entry, such as the host's own VXLAN on the
same port) and went on unchanged to the host. ENDPOINT names a directory under
the root (e.g. tb1a2b3c-a); without one, every endpoint is shown. The same
counters are stored with each measured cell (meta.extra).

With --testbed ssh -f SCENARIO it prints the same for every host of the
scenario, over SSH, each line prefixed with the site's name: the programs
of a run on ssh sit on the hosts, not on this machine.`,
		Example: `  tunbench ebpf stats
  tunbench ebpf stats tb1a2b3c-a --max-rules 0
  tunbench ebpf stats --testbed ssh -f two-hosts.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			tb, err := testbeds.Lookup(name)
			switch {
			case err == nil && tb.Local:
				return ebpfStats(cmd.OutOrStdout(), root, args, max)
			case err != nil || tb.OnEachSite == nil:
				return fmt.Errorf("--testbed %q: use %s", name, testbeds.Choices(readsEBPF))
			case file == "":
				return fmt.Errorf("--testbed %s: give the scenario naming the hosts with -f", name)
			}
			s, reg, err := remoteScenario(file, name)
			if err != nil {
				return err
			}
			argv := append([]string{"ebpf", "stats", "--root", root, "--max-rules", strconv.Itoa(max)}, args...)
			lines, err := tb.OnEachSite(cmd.Context(), s, reg, env, argv)
			for _, l := range lines {
				fmt.Fprintln(cmd.OutOrStdout(), l)
			}
			if err != nil {
				return fmt.Errorf("ebpf stats:\n%w", indent(err))
			}
			return nil
		},
	}
	stats.Flags().StringVar(&root, "root", ebpf.PinRoot, "directory holding the endpoints' pin directories")
	stats.Flags().IntVar(&max, "max-rules", 20, "rules to print per endpoint (0: all)")
	stats.Flags().StringVar(&name, "testbed", "", testbeds.Help(readsEBPF, false)+": read every host of the scenario given with -f")
	stats.Flags().StringVarP(&file, "scenario", "f", "", "scenario naming the hosts (with --testbed ssh)")
	cmd.AddCommand(stats)
	return cmd
}

func ebpfStats(w io.Writer, root string, names []string, max int) error {
	var dirs []string
	if len(names) > 0 {
		for _, n := range names {
			dirs = append(dirs, filepath.Join(root, n))
		}
	} else {
		entries, err := os.ReadDir(root)
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("list %s: %w", root, err)
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	if len(dirs) == 0 {
		fmt.Fprintf(w, "no eBPF data path is running (nothing pinned under %s)\n", root)
		return nil
	}
	for _, dir := range dirs {
		p, err := ebpf.OpenPinned(dir)
		if err != nil {
			return err
		}
		s, err := p.Stats()
		p.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		fmt.Fprintf(w, "%s: %d rules, %d decap entries\n", filepath.Base(dir), len(s.Rules), len(s.Decaps))
		for i, r := range s.Rules {
			if max > 0 && i == max {
				fmt.Fprintf(w, "  ... %d more rules (--max-rules 0 shows all)\n", len(s.Rules)-max)
				break
			}
			fmt.Fprintf(w, "  rule %d %s -> %s %s vni %d: %s\n", r.ID, r.Dst, r.Remote, r.Encap, r.VNI, r.Counters)
		}
		for _, d := range s.Decaps {
			fmt.Fprintf(w, "  decap %d %s vni %d: %s\n", d.ID, d.Encap, d.VNI, d.Counters)
		}
		fmt.Fprintf(w, "  no rule: %s\n", ebpf.Counters{Drops: s.Drops}.DropString())
		fmt.Fprintf(w, "  not ours: passed %d\n", s.NotOurs)
	}
	return nil
}
