package ebpf

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// Probe says in one line what the running kernel (or the caller's
// privileges) lacks for the data path, or returns nil: the program type,
// map type and helpers it uses, then a real load of the programs (nothing
// is attached). The answer is computed once per process.
var Probe = sync.OnceValue(probe)

// Requirement names what Probe checks, for "tunbench methods".
const Requirement = "tc BPF programs (cls_bpf, clsact) with bpf_skb_adjust_room tunnel flags and LPM trie maps"

func probe() error {
	if err := features.HaveProgramType(ebpf.SchedCLS); err != nil {
		return explain("tc BPF programs (sched_cls)", err)
	}
	if err := features.HaveMapType(ebpf.LPMTrie); err != nil {
		return explain("LPM trie maps", err)
	}
	for _, h := range []asm.BuiltinFunc{asm.FnSkbAdjustRoom, asm.FnSkbLoadBytes, asm.FnSkbStoreBytes, asm.FnGetHashRecalc} {
		if err := features.HaveProgramHelper(ebpf.SchedCLS, h); err != nil {
			return explain("BPF helper "+helperName(h), err)
		}
	}
	o, err := Load(Config{MaxRules: 16})
	if err != nil {
		return explain("tunbench's tunnel programs", err)
	}
	return o.Close()
}

func explain(what string, err error) error {
	switch {
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("root (CAP_BPF and CAP_NET_ADMIN) to probe %s", what)
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, ErrNotSupported):
		return fmt.Errorf("%s (missing: %w)", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func helperName(h asm.BuiltinFunc) string {
	switch h {
	case asm.FnSkbAdjustRoom:
		return "bpf_skb_adjust_room"
	case asm.FnSkbLoadBytes:
		return "bpf_skb_load_bytes"
	case asm.FnSkbStoreBytes:
		return "bpf_skb_store_bytes"
	case asm.FnGetHashRecalc:
		return "bpf_get_hash_recalc"
	}
	return h.String()
}
