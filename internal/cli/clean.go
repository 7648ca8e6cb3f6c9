package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/sshbed"
	"github.com/tunbench/tunbench/internal/testbed"
)

func newCleanCmd() *cobra.Command {
	var run, site, bed, file string
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what killed runs left behind",
		Long: `Remove what a killed run (kill -9, power loss) left behind: network
namespaces named tunbench-<id>-a/b with every process inside them, the
processes a run recorded, devices named tb<id>-... of dead runs, and its
private directory under /run/tunbench, after putting back from its
journal what it changed on the host outside its own devices (the
underlay's MTU and every offload feature with ssh.host_changes, addresses
OVS moved, sysctls, tc programs, BPF pins, congestion-control routes). Runs still alive hold a
lock and are left alone; nothing else is touched. tunbench run does the
same before it starts.

With --testbed ssh -f SCENARIO it does that on every host of the
scenario, over SSH; add --run ID to remove that run's state on each host
whatever its lock says (after a lost connection). --run ID --site NAME
alone cleans this host as site NAME of run ID: what the controller runs on
a host it lost and reached again.`,
		Example: `  tunbench clean
  tunbench clean --testbed ssh -f mesh.yaml
  tunbench clean --testbed ssh -f mesh.yaml --run 3fa2c1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			switch {
			case bed == "ssh":
				if file == "" {
					return errors.New("--testbed ssh: give the scenario naming the hosts with -f")
				}
				s, reg, err := sshScenario(file)
				if err != nil {
					return err
				}
				if run != "" && !testbed.ValidID(run) {
					return fmt.Errorf("--run %q: a run id is six hex digits, as tunbench run prints it", run)
				}
				lines, err := sshbed.Clean(cmd.Context(), sshConfig(s, reg, run, nil), run)
				for _, l := range lines {
					fmt.Fprintln(out, l)
				}
				if err != nil {
					return fmt.Errorf("clean:\n%w", indent(err))
				}
				return nil
			case bed != "" && bed != "local":
				return fmt.Errorf("--testbed %q: use local (the default) or ssh", bed)
			case site != "" || run != "":
				if site == "" || run == "" {
					return errors.New("--run and --site go together: clean this host as site NAME of run ID")
				}
				removed, err := testbed.CleanSite("", run, site)
				printRemoved(out, removed)
				if err != nil {
					return fmt.Errorf("clean: %w", err)
				}
				return nil
			}
			removed, err := testbed.Clean("")
			printRemoved(out, removed)
			if err != nil {
				return fmt.Errorf("clean: %w", err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&bed, "testbed", "", "local (default) or ssh: clean every host of the scenario given with -f")
	fl.StringVarP(&file, "scenario", "f", "", "scenario naming the hosts (with --testbed ssh)")
	fl.StringVar(&run, "run", "", "run id whose state to remove whatever its lock says (ssh hosts)")
	fl.StringVar(&site, "site", "", "clean this host as this site of --run")
	return cmd
}

// sshScenario reads and validates the ssh scenario in file, for the
// commands that reach its hosts without running it (clean, ebpf stats).
func sshScenario(file string) (scenario.Scenario, *method.Registry, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return scenario.Scenario{}, nil, fmt.Errorf("read scenario: %w", err)
	}
	s, err := scenario.Parse(data)
	if err != nil {
		return scenario.Scenario{}, nil, fmt.Errorf("scenario %s: %w", file, err)
	}
	reg := registry.Builtin()
	if s.Testbed != "ssh" {
		return scenario.Scenario{}, nil, fmt.Errorf("scenario %s: testbed is %q, not ssh", file, s.Testbed)
	}
	if err := s.Validate(runner.Catalog(reg)); err != nil {
		return scenario.Scenario{}, nil, fmt.Errorf("invalid scenario:\n%w", indent(err))
	}
	return s, reg, nil
}

func printRemoved(out interface{ Write([]byte) (int, error) }, removed []testbed.Leftover) {
	for _, r := range removed {
		fmt.Fprintf(out, "removed %s\n", r)
	}
	if len(removed) == 0 {
		fmt.Fprintln(out, "nothing to clean")
	}
}
