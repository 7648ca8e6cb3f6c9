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

// ProbeFamilyChange says whether the kernel can decapsulate an inner
// packet of the other family than the outer one (IPv6 in IPv4 GRE or
// IPIP), which needs bpf_skb_adjust_room's BPF_F_ADJ_ROOM_DECAP_L3_*
// flags (Linux 6.3): it runs the ingress program (BPF_PROG_TEST_RUN) on a
// crafted IPv6-in-GRE-in-IPv4 packet. Computed once per process.
var ProbeFamilyChange = sync.OnceValue(probeFamilyChange)

func probeFamilyChange() error {
	if err := Probe(); err != nil {
		return err
	}
	o, err := Load(Config{MaxRules: 16})
	if err != nil {
		return err
	}
	defer o.Close()
	if err := o.Table().PutDecaps([]Decap{{ID: 1, Encap: GRE}}); err != nil {
		return err
	}
	pkt := make([]byte, 14+20+4+40)
	copy(pkt[0:12], []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1})
	pkt[12], pkt[13] = 0x08, 0x00
	ip := pkt[14:]
	ip[0], ip[3], ip[8], ip[9] = 0x45, 20+4+40, 64, 47
	copy(ip[12:20], []byte{198, 18, 0, 1, 198, 18, 0, 2})
	gre := ip[20:]
	gre[2], gre[3] = 0x86, 0xdd
	in6 := gre[4:]
	in6[0], in6[6], in6[7] = 0x60, 59, 64
	ret, err := o.Ingress().Run(&ebpf.RunOptions{Data: pkt})
	if err != nil {
		return fmt.Errorf("test run of the ingress program: %w", err)
	}
	if ret != 0 {
		return fmt.Errorf("bpf_skb_adjust_room with BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (Linux 6.3) to carry IPv6 over an IPv4 underlay (%w)", ErrNotSupported)
	}
	return nil
}
