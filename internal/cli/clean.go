package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/bed"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

// cleans says whether "tunbench clean" cleans a testbed.
func cleans(e bed.Entry) bool { return e.Clean != nil }

func newCleanCmd(env bed.Env) *cobra.Command {
	var run, site, name, file string
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
same before it starts, and on ssh hosts each run's agent first puts back
what the journals of dead runs there still hold.

With --testbed ssh -f SCENARIO it does that on every host of the
scenario, over SSH; add --run ID to remove that run's state on each host
whatever its lock says (after a lost connection). --run ID --site NAME
alone cleans this host as site NAME of run ID: what the controller runs on
a host it lost and reached again.

With --testbed kubernetes -f SCENARIO it cleans the scenario's cluster:
for every run with pods there (labelled tunbench.run=<id>) whose agents
are gone, or for --run ID whatever they are, it runs the same clean on
each node and ordinary pod through the run's pods, then deletes them.`,
		Example: `  tunbench clean
  tunbench clean --testbed ssh -f mesh.yaml
  tunbench clean --testbed ssh -f mesh.yaml --run 3fa2c1
  tunbench clean --testbed kubernetes -f cluster.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			tb, err := testbeds.Lookup(name)
			if err != nil || tb.Clean == nil {
				return fmt.Errorf("--testbed %q: use %s", name, testbeds.Choices(cleans))
			}
			job := bed.CleanJob{Run: run, Site: site}
			if tb.Remote {
				if file == "" {
					return fmt.Errorf("--testbed %s: give the scenario naming the hosts with -f", name)
				}
				if job.Scenario, job.Methods, err = remoteScenario(file, name); err != nil {
					return err
				}
				if run != "" && !testbed.ValidID(run) {
					return fmt.Errorf("--run %q: a run id is six hex digits, as tunbench run prints it", run)
				}
				job.Site = ""
			}
			lines, err := tb.Clean(cmd.Context(), job, env)
			for _, l := range lines {
				fmt.Fprintln(out, l)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&name, "testbed", "", testbeds.Help(cleans, false)+": clean every host (node) of the scenario given with -f")
	fl.StringVarP(&file, "scenario", "f", "", "scenario naming the hosts (with --testbed ssh or kubernetes)")
	fl.StringVar(&run, "run", "", "run id whose state to remove whatever its lock says (ssh hosts, kubernetes nodes and pods)")
	fl.StringVar(&site, "site", "", "clean this host as this site of --run")
	return cmd
}

// remoteScenario reads and validates the scenario in file, whose testbed
// must be name (a remote one: the scenario names its hosts), for the
// commands that reach its hosts without running it (clean, ebpf stats).
func remoteScenario(file, name string) (scenario.Scenario, *method.Registry, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return scenario.Scenario{}, nil, fmt.Errorf("read scenario: %w", err)
	}
	s, err := scenario.Parse(data)
	if err != nil {
		return scenario.Scenario{}, nil, fmt.Errorf("scenario %s: %w", file, err)
	}
	reg := registry.Builtin()
	if s.Testbed != name {
		return scenario.Scenario{}, nil, fmt.Errorf("scenario %s: testbed is %q, not %s", file, s.Testbed, name)
	}
	if err := s.Validate(testbeds.Catalog(reg)); err != nil {
		return scenario.Scenario{}, nil, fmt.Errorf("invalid scenario:\n%w", indent(err))
	}
	return s, reg, nil
}
