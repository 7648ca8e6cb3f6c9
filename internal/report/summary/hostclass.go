package summary

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// cellHosts are the machines that measured cell c: the hosts recorded with
// the cell (ssh testbed: each endpoint that is not this machine), plus the
// run's host unless both endpoints are recorded.
func cellHosts(run result.Run, c result.Cell) []result.Host {
	if len(c.Meta.Hosts) >= 2 {
		return c.Meta.Hosts
	}
	return append(slices.Clone(c.Meta.Hosts), run.Host)
}

// CellEmulated reports whether cell c's figures come from software
// emulation: the testbed said so, or a host that measured it is emulated.
func CellEmulated(run result.Run, c result.Cell) bool {
	return c.Meta.Emulated || run.Host.IsEmulated() ||
		slices.ContainsFunc(c.Meta.Hosts, result.Host.IsEmulated)
}

// vmName names a virtual machine by its hypervisor, and by its site on
// the ssh testbed: "KVM", "fra: KVM"; "" for a host that is no vm.
func vmName(h result.Host) string {
	if h.Class != result.ClassVM {
		return ""
	}
	hv := h.Hypervisor
	if hv == "" {
		hv = "unknown hypervisor"
	}
	if h.Site != "" {
		return h.Site + ": " + hv
	}
	return hv
}

// addVMs adds the vmName of cell c's hosts to vms, each once, sorted.
func addVMs(vms []string, run result.Run, c result.Cell) []string {
	for _, h := range cellHosts(run, c) {
		if n := vmName(h); n != "" && !slices.Contains(vms, n) {
			vms = append(vms, n)
		}
	}
	slices.Sort(vms)
	return vms
}

// VMNote is the table's and the report's note for rows measured on
// virtual machines, or "" when none was.
func VMNote(rows []Summary) string {
	var vms []string
	for _, r := range rows {
		for _, v := range r.VMs {
			if !slices.Contains(vms, v) {
				vms = append(vms, v)
			}
		}
	}
	if len(vms) == 0 {
		return ""
	}
	slices.Sort(vms)
	what := "a virtual machine"
	if len(vms) > 1 {
		what = "virtual machines"
	}
	return fmt.Sprintf("measured on %s (%s): the figures include the hypervisor's costs and depend on how it shares "+
		"CPUs, memory and network with other guests; compare them with runs on the same kind of host, not with bare metal.",
		what, strings.Join(vms, "; "))
}
