package runner

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/stats"
	"github.com/tunbench/tunbench/internal/testbed"
)

// What a scaled cell's tunnels cost (result.Scale, docs/scale.md): the
// method's Setup and Teardown on the runner's clock, its per-tunnel
// adds (method.Path.Adds) as percentiles, and memory: the kernel's slab
// (/proc/meminfo) on the distinct hosts of the two sides before and
// after Setup, and the resident memory of the method's daemons
// (/proc/PID/status), all read through the endpoints.

// scaleMemory is the memory read around a scaled set-up.
type scaleMemory struct {
	slab   int64
	shared bool
}

// readSlab reads the kernel's slab memory of tb's hosts, summed over the
// distinct ones: on one machine (the local testbed's two namespaces)
// both sides share one kernel and it is read once (shared).
func readSlab(tb *testbed.Pair) (scaleMemory, error) {
	eps := tb.Endpoints()
	shared := sameMachine(tb)
	if shared {
		eps = eps[:1]
	}
	var sum int64
	for _, ep := range eps {
		data, err := ep.ReadFile("/proc/meminfo")
		if err != nil {
			return scaleMemory{}, fmt.Errorf("read /proc/meminfo of %s: %w", ep.Side, err)
		}
		v, err := meminfoField(data, "Slab")
		if err != nil {
			return scaleMemory{}, fmt.Errorf("/proc/meminfo of %s: %w", ep.Side, err)
		}
		sum += v
	}
	return scaleMemory{slab: sum, shared: shared}, nil
}

// meminfoField returns the field name of a /proc/meminfo (or
// /proc/PID/status) text in bytes: "Slab:  123456 kB" gives 123456*1024.
func meminfoField(data []byte, name string) (int64, error) {
	for line := range bytes.Lines(data) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || string(k) != name {
			continue
		}
		f := bytes.Fields(v)
		if len(f) == 0 {
			break
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a number", name, f[0])
		}
		if len(f) > 1 && string(f[1]) == "kB" {
			n *= 1024
		}
		return n, nil
	}
	return 0, fmt.Errorf("no %s field", name)
}

// daemonRSS sums the resident memory (VmRSS) of path's daemons, each read
// on its side's host.
func daemonRSS(tb *testbed.Pair, path *method.Path) (int64, error) {
	var sum int64
	for _, d := range path.Daemons {
		ep := tb.A
		if d.Side == "b" {
			ep = tb.B
		}
		data, err := ep.ReadFile(fmt.Sprintf("/proc/%d/status", d.PID))
		if err != nil {
			return 0, fmt.Errorf("read the status of %s-%s (pid %d): %w", d.Role, d.Side, d.PID, err)
		}
		v, err := meminfoField(data, "VmRSS")
		if err != nil {
			return 0, fmt.Errorf("status of %s-%s (pid %d): %w", d.Role, d.Side, d.PID, err)
		}
		sum += v
	}
	return sum, nil
}

// newScale is the record of a scaled set-up of n tunnels of unit that
// took setup, with the adds the method timed and the memory before and
// after (rss: its daemons'). PerTunnel is the memory it took divided by
// n; the percentiles are zero when the method timed no add.
func newScale(n int, unit string, setup time.Duration, adds []time.Duration, before, after scaleMemory, rss int64) *result.Scale {
	sc := &result.Scale{
		Tunnels: n, Unit: unit, Setup: setup.Seconds(), Adds: len(adds),
		SlabBefore: before.slab, SlabAfter: after.slab, DaemonRSS: rss,
		SharedKernel: before.shared,
	}
	if len(adds) > 0 {
		s := make([]float64, len(adds))
		for i, d := range adds {
			s[i] = d.Seconds()
		}
		slices.Sort(s)
		sc.AddP50, sc.AddP99 = stats.Quantile(s, 0.5), stats.Quantile(s, 0.99)
	}
	if n > 0 {
		sc.PerTunnel = float64(after.slab-before.slab+rss) / float64(n)
	}
	return sc
}

// scaleUnit is what one tunnel of the cell's method is (method.ScaleOf).
func (s *stepRun) scaleUnit() string {
	p := s.st.Params
	vals, err := method.ParseOptions(s.m, p.Options)
	if err != nil {
		return "tunnel"
	}
	return method.ScaleOf(s.m, p.Family, vals).Unit
}

// toolMemory is tunbench's own resident memory before a scaled set-up
// (result.Scale's ToolRSSBefore): the process running the cell and each
// distinct agent process serving a remote side.
type toolMemory struct{ rss int64 }

// toolProcs are the tunbench processes of tb: nil stands for this
// process, an endpoint for the agent serving it (its own /proc/self,
// read through the endpoint). Both sides of the local testbed are this
// process.
func toolProcs(tb *testbed.Pair) []*testbed.Endpoint {
	procs := []*testbed.Endpoint{nil}
	for _, ep := range tb.Endpoints() {
		if !ep.Local() {
			procs = append(procs, ep)
		}
	}
	return procs
}

// readSelfStatus reads /proc/self/status of this process (ep nil) or of
// the agent serving ep.
func readSelfStatus(ep *testbed.Endpoint) ([]byte, error) {
	if ep == nil {
		return os.ReadFile("/proc/self/status")
	}
	return ep.ReadFile("/proc/self/status")
}

// resetToolPeak reads tunbench's resident memory now and resets each
// process's high-water mark (writing 5 to /proc/self/clear_refs), so
// that readToolPeak reads the peak of what follows. A kernel or host
// that refuses the reset leaves the peak since the process started,
// never lower than the set-up's.
func resetToolPeak(tb *testbed.Pair) (toolMemory, error) {
	var m toolMemory
	seen := map[string]bool{}
	for _, ep := range toolProcs(tb) {
		data, err := readSelfStatus(ep)
		if err != nil {
			return m, fmt.Errorf("tunbench's own memory: %w", err)
		}
		if id := procID(ep, data); seen[id] {
			continue
		} else {
			seen[id] = true
		}
		v, err := meminfoField(data, "VmRSS")
		if err != nil {
			return m, fmt.Errorf("tunbench's own memory: %w", err)
		}
		m.rss += v
		if ep == nil {
			_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		} else {
			_ = ep.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		}
	}
	return m, nil
}

// readToolPeak sums the high-water marks (VmHWM) of tunbench's processes.
func readToolPeak(tb *testbed.Pair) (int64, error) {
	var sum int64
	seen := map[string]bool{}
	for _, ep := range toolProcs(tb) {
		data, err := readSelfStatus(ep)
		if err != nil {
			return 0, fmt.Errorf("tunbench's own memory: %w", err)
		}
		if id := procID(ep, data); seen[id] {
			continue
		} else {
			seen[id] = true
		}
		v, err := meminfoField(data, "VmHWM")
		if err != nil {
			return 0, fmt.Errorf("tunbench's own memory: %w", err)
		}
		sum += v
	}
	return sum, nil
}

// procID names the process whose status data is: its host and pid, so
// that two sides served by one agent count it once.
func procID(ep *testbed.Endpoint, data []byte) string {
	pid, _ := meminfoField(data, "Pid")
	if ep == nil {
		return "self/" + strconv.FormatInt(pid, 10)
	}
	return ep.Host + "/" + strconv.FormatInt(pid, 10)
}
