// Package ebpftun is the ebpf-* methods (ebpf-geneve, ebpf-vxlan,
// ebpf-gre, ebpf-ipip): tunbench's own tunnel data path of internal/ebpf,
// its tc programs attached beside the host's on each side's underlay
// device and its rule map filled for the run.
package ebpftun
