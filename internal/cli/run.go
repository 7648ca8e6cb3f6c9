package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/bed"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed"
)

type runFlags struct {
	file        string
	methods     []string
	families    []string
	mtus        []int
	offloads    []string
	streams     []int
	duration    string
	omit        string
	latency     string
	latencyTool string
	reps        int
	order       string
	pin         bool
	testbed     string
	kernel      string
	modules     string
	options     []string
	vmMemory    int
	vmTimeout   time.Duration
	db          string
	export      string
	json        bool
	quiet       bool
	dryRun      bool
	scale       float64
	resume      string
	tests       []string
	directions  []string
	mss         []int
	tunnels     []int
	cc          []string
	udpSizes    []int
	udpRate     string
	fragment    bool
	spp         int
	spread      bool
	skip        bool
	labels      []string
	// env is the machine the run starts from (tests give fakes).
	env bed.Env
	// changed reports whether the user set a flag, so that a zero or
	// empty value given on purpose is validated rather than taken for
	// "not set".
	changed func(name string) bool
}

func newRunCmd(env bed.Env) *cobra.Command {
	f := runFlags{env: env}
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "Run a benchmark matrix and print the comparison table",
		Long: `Run a benchmark: every combination of methods, families, MTUs, offload
states, directions, MSS values, TCP congestion control algorithms and
stream counts, each running the
scenario's tests (tcp_stream and tcp_rr by default; also parallel,
latency_under_load, udp_sizes, mtu_probe, and connect and recover: the
time to the first packet after set-up, and traffic across an underlay
flap and a forced rekey), each repeated. The matrix comes from the default
scenario, a YAML file (-f), and flags, in that order of precedence (flags
win). Each finished measurement is committed to the results database at
once; a JSON export of the run is written at the end.

Before anything is created, the machine is checked: a method whose kernel
option or program is missing refuses the run, unless --skip-unavailable,
which measures the other methods and names each skipped one, with its
reason, in the table and the report.

Default: methods native, vxlan and srv6, IPv4, MTU 1500, offloads on, one
TCP stream with cubic (set inside tunbench's own namespaces; the host's
setting is never touched) for 10 s after 1 s of warm-up, 3 s of
request/response latency, 3 repetitions: about two and a half minutes.

Exit status: 0 when every cell (every repetition) is ok; 5 when the
whole matrix ran but a cell failed (the others were still measured and
stored, and stderr names the failures); 1 when the run stopped or never
started (bad input, a refused requirement, an interruption). Methods
that --skip-unavailable skips are not failures.`,
		Example: `  tunbench run
  tunbench run --methods native,vxlan --mtu 1500,9000 --offloads on,off
  tunbench run --cc cubic,bbr
  tunbench run --methods vxlan,wireguard-go --tunnels 1,100,1000 --tests tcp_stream,reconf
  tunbench run --methods vxlan --tunnels 100 --tests parallel --streams 4 --streams-per-process 1 --spread
  tunbench run -f examples/paper-parallel.yaml --dry-run
  tunbench run -f examples/paper-singlestream.yaml --scale 0.1 --skip-unavailable
  tunbench run --resume latest
  tunbench run --label kernel_commit=3f2a9c1 --label ticket=NET-42
  tunbench run -f scenario.yaml --db /tmp/results.db --json
  tunbench run --db postgres://tunbench@db.example:5432/results`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = cmd.Flags().Changed
			if err := checkDB(f.db); err != nil {
				return err
			}
			if _, err := parseLabels(f.labels); err != nil {
				return err
			}
			return runRun(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "scenario", "f", "", "scenario YAML file (see docs/scenario.md)")
	fl.StringSliceVar(&f.methods, "methods", nil, "methods to measure, comma separated (see tunbench methods)")
	fl.StringSliceVar(&f.families, "family", nil, "address families: ipv4, ipv6 or both")
	fl.IntSliceVar(&f.mtus, "mtu", nil, "underlay MTUs, e.g. 1500,9000")
	fl.StringSliceVar(&f.offloads, "offloads", nil, "TSO/GSO/GRO state: on, off or both")
	fl.IntSliceVar(&f.streams, "streams", nil, "parallel TCP streams, e.g. 1,4")
	fl.StringVar(&f.duration, "duration", "", "throughput test length, whole seconds (default 10s)")
	fl.StringVar(&f.omit, "omit", "", "warm-up excluded from the figures (default 1s)")
	fl.StringVar(&f.latency, "latency", "", "request/response latency test length, 0s to skip (default 3s)")
	fl.StringVar(&f.latencyTool, "latency-tool", "", "rr (default: tunbench's TCP request/response, IPv4 and IPv6) or sockperf (IPv4 only)")
	fl.IntVar(&f.reps, "reps", 0, "repetitions of each cell, 1 to 1000 (default 3)")
	fl.StringVar(&f.order, "order", "", "interleave (default) or grouped")
	fl.BoolVar(&f.pin, "pin", false, "pin side a to the first half of the CPUs and side b to the rest")
	fl.StringVar(&f.testbed, "testbed", "", testbeds.Help(nil, true))
	fl.StringVar(&f.kernel, "kernel", "", "vm testbed: vmlinuz to boot (default: Debian's stock kernel, fetched)")
	fl.StringVar(&f.modules, "modules", "", "vm testbed: the kernel's modules directory (lib/modules/<version>)")
	fl.IntVar(&f.vmMemory, "vm-memory", lab.DefaultMemoryMiB, fmt.Sprintf("vm testbed: guest memory in MiB, %d to %d", lab.MinMemoryMiB, lab.MaxMemoryMiB))
	fl.DurationVar(&f.vmTimeout, "vm-timeout", 0, fmt.Sprintf("vm testbed: the most the whole run in the guest may take, at least %s (default: five minutes and ten times the plan's estimate)", lab.MinRunTimeout))
	fl.StringArrayVar(&f.options, "option", nil, "method option METHOD.KEY=VALUE, e.g. vxlan.vni=7 (repeatable)")
	fl.StringVar(&f.db, "db", "", dbHelp())
	fl.StringArrayVar(&f.labels, "label", nil, "label the run KEY=VALUE (repeatable), e.g. kernel_commit=abc123: what tunbench cannot see; stored with the run")
	fl.StringVar(&f.export, "export", "", "JSON export path (default exports/<run id>.json beside the database)")
	fl.BoolVar(&f.json, "json", false, "print the summary as JSON instead of the table")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress line; print only the table (or JSON)")
	fl.StringSliceVar(&f.tests, "tests", nil, "tests run in every cell: "+strings.Join(scenario.Tests, ", ")+" (default tcp_stream,tcp_rr)")
	fl.StringSliceVar(&f.directions, "direction", nil, "TCP direction: forward, reverse, bidir or several (default forward)")
	fl.IntSliceVar(&f.tunnels, "tunnels", nil, "tunnels between the endpoints per method, e.g. 1,100,1000 (a mesh's cost; default 1; tunbench methods --options says what one tunnel is)")
	fl.IntSliceVar(&f.mss, "mss", nil, "TCP MSS values (iperf3 -M), e.g. 1220,472,216 (default: the kernel's)")
	fl.StringSliceVar(&f.cc, "cc", nil, "TCP congestion control algorithms, e.g. cubic,bbr (default cubic, set in tunbench's namespaces; on ssh per connection, default the hosts')")
	fl.IntVar(&f.spp, "streams-per-process", 0, "parallel test: streams per iperf3 process, 1 to 128 (default 128)")
	fl.BoolVar(&f.spread, "spread", false, "parallel test: each iperf3 process crosses a tunnel of its own (K processes over K of --tunnels, centred on the measured one) instead of all the measured one")
	fl.IntSliceVar(&f.udpSizes, "udp-sizes", nil, "udp_sizes test: Ethernet frame sizes, e.g. 64,512,1514 (default seed 002's 13 sizes)")
	fl.StringVar(&f.udpRate, "udp-rate", "", "udp_sizes test: unlimited (default), search (NDR/PDR) or an offered rate such as 1G")
	fl.BoolVar(&f.fragment, "fragment", false, "udp_sizes test: measure sizes above the overlay MTU fragmented instead of refusing them")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the expanded matrix, its size and estimated duration; create nothing")
	fl.Float64Var(&f.scale, "scale", 1, "multiply every duration by this factor, e.g. 0.1 (whole seconds kept whole)")
	fl.BoolVar(&f.skip, "skip-unavailable", false, "measure the methods this machine can carry and skip the rest (a missing kernel option or program), naming each with its reason in the table and report; without it such a run is refused")
	fl.StringVar(&f.resume, "resume", "", "continue an interrupted run (id, prefix or latest): measure only the cells it lacks")
	return cmd
}

// buildScenario merges defaults, the file and the flags the user set.
func buildScenario(f runFlags) (scenario.Scenario, error) {
	set := f.changed
	if set == nil {
		set = func(string) bool { return false }
	}
	s := scenario.Default()
	if f.file != "" {
		data, err := os.ReadFile(f.file)
		if err != nil {
			return s, fmt.Errorf("read scenario: %w", err)
		}
		if s, err = scenario.Parse(data); err != nil {
			return s, fmt.Errorf("%s: %w", f.file, err)
		}
	}
	lists := []struct {
		flag string
		dst  *[]string
		v    []string
	}{
		{"methods", &s.Methods, f.methods}, {"family", &s.Families, f.families}, {"offloads", &s.Offloads, f.offloads},
	}
	for _, l := range lists {
		if set(l.flag) {
			*l.dst = l.v
		}
	}
	if set("mtu") {
		s.MTUs = f.mtus
	}
	if set("streams") {
		s.Streams = f.streams
	}
	strs := []struct {
		flag string
		dst  *string
		v    string
	}{
		{"duration", &s.Duration, f.duration}, {"omit", &s.Omit, f.omit}, {"latency", &s.Latency, f.latency},
		{"latency-tool", &s.LatencyTool, f.latencyTool}, {"order", &s.Order, f.order}, {"testbed", &s.Testbed, f.testbed},
		{"kernel", &s.Kernel, f.kernel}, {"modules", &s.Modules, f.modules},
	}
	for _, v := range strs {
		if set(v.flag) {
			*v.dst = v.v
		}
	}
	if set("reps") {
		s.Repetitions = f.reps
	}
	if set("tests") {
		s.Tests = f.tests
	}
	if set("direction") {
		s.Directions = f.directions
	}
	if set("tunnels") {
		s.Tunnels = f.tunnels
	}
	if set("mss") {
		s.MSS = f.mss
	}
	if set("cc") {
		s.CongestionControl = f.cc
	}
	if set("streams-per-process") {
		s.StreamsPerProcess = f.spp
	}
	if set("spread") {
		s.Spread = f.spread
	}
	if set("udp-sizes") {
		s.UDP.Sizes = f.udpSizes
	}
	if set("udp-rate") {
		s.UDP.Rate = f.udpRate
	}
	if set("fragment") {
		s.UDP.Fragment = f.fragment
	}
	if set("scale") {
		if !(f.scale > 0 && f.scale <= 100) {
			return s, fmt.Errorf("--scale %v: use a factor above 0 and at most 100, e.g. 0.1", f.scale)
		}
		s = s.Scale(f.scale)
	}
	if set("pin") {
		s.Pin = f.pin
	}
	if f.vmMemory < lab.MinMemoryMiB || f.vmMemory > lab.MaxMemoryMiB {
		return s, fmt.Errorf("--vm-memory %d: use %d to %d MiB (default %d)", f.vmMemory, lab.MinMemoryMiB, lab.MaxMemoryMiB, lab.DefaultMemoryMiB)
	}
	if f.vmTimeout != 0 && f.vmTimeout < lab.MinRunTimeout {
		return s, fmt.Errorf("--vm-timeout %s: give at least %s (the guest's boot, and the run's own stop and teardown before the guest is killed), or leave it out for five minutes and ten times the plan's estimate", f.vmTimeout, lab.MinRunTimeout)
	}
	for _, o := range f.options {
		name, kv, ok := strings.Cut(o, ".")
		k, v, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 || name == "" || k == "" {
			return s, fmt.Errorf("--option %q: write METHOD.KEY=VALUE, e.g. vxlan.vni=7", o)
		}
		if s.Options == nil {
			s.Options = map[string]map[string]string{}
		}
		if s.Options[name] == nil {
			s.Options[name] = map[string]string{}
		}
		s.Options[name][k] = v
	}
	return s, nil
}

func runRun(cmd *cobra.Command, f runFlags) error {
	stdout := cmd.OutOrStdout()
	reg := registry.Builtin()
	if f.resume != "" {
		return resumeRun(cmd, f, reg)
	}
	s, err := buildScenario(f)
	if err != nil {
		return err
	}
	if err := s.Validate(testbeds.Catalog(reg)); err != nil {
		return fmt.Errorf("invalid scenario:\n%w", indent(err))
	}
	tb, err := testbeds.Lookup(s.Testbed)
	if err != nil {
		return err
	}
	if f.skip {
		if s, err = skipUnavailable(s, reg, tb, f.env); err != nil {
			return err
		}
		if !f.quiet {
			for _, k := range s.Skipped {
				fmt.Fprintf(cmd.ErrOrStderr(), "skipping %s: %s\n", k.Method, k.Reason)
			}
		}
	}
	if f.dryRun {
		return dryRun(stdout, s, reg, nil)
	}
	if err := tb.Preflight(s, reg, f.env); err != nil {
		return err
	}
	sess, err := openSession(cmd, f, reg)
	if err != nil {
		return err
	}
	defer sess.Close()
	res, err := sess.Run(cmd.Context(), s, reg)
	return finishRun(cmd, f, sess, res, err)
}

// checkHere refuses, before anything is created, a run this machine
// cannot carry (the testbed's Preflight; the remote testbeds ask nothing
// of this machine, and the hosts are checked, each by its own kernel,
// when the testbed opens). New and resumed runs go through it alike.
func checkHere(s scenario.Scenario, reg *method.Registry, env bed.Env) error {
	tb, err := testbeds.Lookup(s.Testbed)
	if err != nil {
		return err
	}
	return tb.Preflight(s, reg, env)
}

// openSession opens the session a run or resume measures in, with the
// flags' database and output; it opens the scenario's testbed through
// its registry entry.
func openSession(cmd *cobra.Command, f runFlags, reg *method.Registry) (*runner.Session, error) {
	stderr := cmd.ErrOrStderr()
	labels, err := parseLabels(f.labels)
	if err != nil {
		return nil, err
	}
	env := f.env
	env.LabMemoryMiB = f.vmMemory
	env.LabTimeout = f.vmTimeout
	opt := runner.SessionOptions{
		DB: f.db, Catalog: testbeds.Catalog(reg), Labels: labels,
		Open: func(ctx context.Context, s scenario.Scenario, id string) (testbed.Testbed, error) {
			tb, err := testbeds.Lookup(s.Testbed)
			if err != nil {
				return nil, err
			}
			return tb.Open(ctx, s, reg, env, id, stderr)
		},
	}
	if !f.quiet {
		opt.Progress, opt.Live, opt.Notes = stderr, isTerminal(stderr), stderr
	}
	return runner.OpenSession(opt)
}

// finishRun writes the export of the run a session returned (res, with
// the session's error err), prints it, and returns the error "tunbench
// run" ends with (runExit).
func finishRun(cmd *cobra.Command, f runFlags, sess *runner.Session, res *runner.Result, err error) error {
	if res == nil {
		return err
	}
	path := exportPath(f.export, sess.DBPath, res.Run.ID, sess.Store.Postgres())
	err = errors.Join(err, writeExport(path, res))
	return runExit(errors.Join(err, printResult(cmd, f, sess, res, path)), res)
}

// printResult prints a run's table (or JSON) and, unless quiet, the
// closing line naming its export's path. A run that measured nothing
// prints nothing.
func printResult(cmd *cobra.Command, f runFlags, sess *runner.Session, res *runner.Result, exportPath string) error {
	if res == nil {
		return nil
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(export.NewDocument(res.Run, res.Cells)); err != nil {
			return err
		}
	} else if err := summary.Table(stdout, res.Run, res.Cells, summary.TableOptions{}); err != nil {
		return err
	}
	if f.quiet {
		return nil
	}
	switch {
	case res.Where != "":
		fmt.Fprintf(stderr, "\nrun %s %s; database %s; export %s\n", res.Run.ID, res.Where, sess.DBPath, exportPath)
	case res.Outcome != nil:
		out := res.Outcome
		fmt.Fprintf(stderr, "\nrun %s: %d cells in %s (harness overhead %.2fx); database %s; export %s\n",
			out.Run.ID, len(out.Cells), out.Wall.Round(1e9), ratio(out), sess.DBPath, exportPath)
	}
	return nil
}

// runExit is the error "tunbench run" ends with: err when the run
// stopped, else ExitCellsFailed when a cell failed, naming how many and
// the first reasons.
func runExit(err error, res *runner.Result) error {
	if err != nil || res == nil {
		return err
	}
	var failed []result.Cell
	for _, c := range res.Cells {
		if c.Status == result.StatusFailed {
			failed = append(failed, c)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d cells failed (the others were measured and stored):", len(failed), len(res.Cells))
	for i, c := range failed {
		if i == 3 {
			fmt.Fprintf(&b, "\n  ... and %d more (tunbench results show %s)", len(failed)-3, res.Run.ID)
			break
		}
		fmt.Fprintf(&b, "\n  %s repetition %d: %s", c.Key, c.Repetition, c.Error)
	}
	return &exitError{code: ExitCellsFailed, err: errors.New(b.String())}
}

func ratio(o *runner.Outcome) float64 {
	if o.Measured == 0 {
		return 0
	}
	return o.Wall.Seconds() / o.Measured.Seconds()
}

// indent puts each joined error on its own indented line.
func indent(err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return errors.New(strings.Join(lines, "\n"))
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// parseLabels reads --label KEY=VALUE flags, each key once, validated
// (result.ValidateLabel names the rule and the fix).
func parseLabels(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, l := range flags {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("--label %q: write KEY=VALUE, e.g. --label kernel_commit=abc123", l)
		}
		if err := result.ValidateLabel(k, v); err != nil {
			return nil, fmt.Errorf("--label: %w", err)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("--label %s: given twice; give each key once", k)
		}
		out[k] = v
	}
	return out, nil
}
