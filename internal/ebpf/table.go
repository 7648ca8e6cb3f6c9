package ebpf

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"

	"github.com/cilium/ebpf"
)

// store is the part of a BPF map a Table uses. The real one wraps
// *ebpf.Map (mapStore); tests use a fake.
type store[K comparable, V any] interface {
	// put writes keys[i] -> vals[i], in batches where the kernel can.
	put(keys []K, vals []V) error
	del(k K) error
	each(fn func(K, V) error) error
}

// Table holds the rules and decap entries of one endpoint and reads their
// counters. The zero value is not usable; see Objects.Table. A Table is
// not safe for concurrent use.
type Table struct {
	rules   store[tunnelRuleKey, tunnelRule]
	decaps  store[tunnelDecapKey, tunnelDecap]
	drops   func() ([]uint64, error)
	notOurs func() (uint64, error)
	config  func(tunnelConfig) error
}

// PutRules adds or replaces rules (batched). Every rule is checked first;
// none is written when one is wrong. Replacing a rule resets its counters.
func (t *Table) PutRules(rules []Rule) error {
	keys := make([]tunnelRuleKey, len(rules))
	vals := make([]tunnelRule, len(rules))
	seen := make(map[netip.Prefix]bool, len(rules))
	for i, r := range rules {
		if err := r.Check(); err != nil {
			return fmt.Errorf("rule %d (%s): %w", r.ID, r.Dst, err)
		}
		if seen[r.Dst] {
			return fmt.Errorf("rule %d: destination %s given twice", r.ID, r.Dst)
		}
		seen[r.Dst] = true
		keys[i], vals[i] = ruleKey(r.Dst), r.encode()
	}
	if err := t.rules.put(keys, vals); err != nil {
		return fmt.Errorf("write %d rules: %w", len(rules), err)
	}
	return nil
}

// DeleteRule removes the rule for dst.
func (t *Table) DeleteRule(dst netip.Prefix) error {
	if err := t.rules.del(ruleKey(dst)); err != nil {
		return fmt.Errorf("delete rule %s: %w", dst, err)
	}
	return nil
}

// PutDecaps accepts tunnel packets of the given encapsulations and VNIs
// and tells the ingress program which encapsulations to look at.
func (t *Table) PutDecaps(ds []Decap) error {
	keys := make([]tunnelDecapKey, len(ds))
	vals := make([]tunnelDecap, len(ds))
	for i, d := range ds {
		if d.Encap < Geneve || d.Encap > IPIP {
			return fmt.Errorf("decap %d: unknown encapsulation %d", d.ID, d.Encap)
		}
		keys[i], vals[i] = decapKey(d), tunnelDecap{Id: d.ID}
	}
	if err := t.decaps.put(keys, vals); err != nil {
		return fmt.Errorf("write %d decap entries: %w", len(ds), err)
	}
	cfg := tunnelConfig{VxlanPort: VXLANPort, GenevePort: GenevePort}
	err := t.decaps.each(func(k tunnelDecapKey, _ tunnelDecap) error {
		cfg.DecapMask |= 1 << k.Encap
		return nil
	})
	if err != nil {
		return fmt.Errorf("list decap entries: %w", err)
	}
	if err := t.config(cfg); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// RuleStats is one rule with its counters.
type RuleStats struct {
	Rule
	Counters
}

// DecapStats is one decap entry with its counters.
type DecapStats struct {
	Decap
	Counters
}

// Stats is everything a Table counts.
type Stats struct {
	Rules  []RuleStats
	Decaps []DecapStats
	// Drops are the drops no rule owns (summed over CPUs), indexed like
	// DropReasons.
	Drops []uint64
	// NotOurs counts the tunnel packets of an enabled encapsulation that
	// were not tunbench's and went on unchanged (TC_ACT_UNSPEC): no decap
	// entry for their VNI or key, or a tunnel header tunbench does not
	// send (summed over CPUs). The host's own overlay on the same port or
	// protocol shows up here.
	NotOurs uint64
}

// Stats reads every rule, decap entry and counter, sorted by ID.
func (t *Table) Stats() (*Stats, error) {
	var s Stats
	err := t.rules.each(func(k tunnelRuleKey, v tunnelRule) error {
		r, c := decodeRule(k, v)
		s.Rules = append(s.Rules, RuleStats{r, c})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read rules: %w", err)
	}
	err = t.decaps.each(func(k tunnelDecapKey, v tunnelDecap) error {
		s.Decaps = append(s.Decaps, DecapStats{Decap{ID: v.Id, Encap: Encap(k.Encap), VNI: k.Vni}, countersFrom(v.C)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read decap entries: %w", err)
	}
	sort.Slice(s.Rules, func(i, j int) bool { return s.Rules[i].ID < s.Rules[j].ID })
	sort.Slice(s.Decaps, func(i, j int) bool { return s.Decaps[i].ID < s.Decaps[j].ID })
	if s.Drops, err = t.drops(); err != nil {
		return nil, fmt.Errorf("read drops: %w", err)
	}
	if s.NotOurs, err = t.notOurs(); err != nil {
		return nil, fmt.Errorf("read not-ours counter: %w", err)
	}
	return &s, nil
}

// mapStore is a store on a real BPF map.
type mapStore[K comparable, V any] struct{ m *ebpf.Map }

// batchSize bounds one BPF_MAP_UPDATE_BATCH call.
const batchSize = 1 << 14

func (s mapStore[K, V]) put(keys []K, vals []V) error {
	for len(keys) > 0 {
		n := min(len(keys), batchSize)
		done, err := s.m.BatchUpdate(keys[:n], vals[:n], nil)
		if errors.Is(err, ebpf.ErrNotSupported) {
			// Kernels without batch operations for this map type.
			for i := range keys {
				if err := s.m.Update(keys[i], vals[i], ebpf.UpdateAny); err != nil {
					return err
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
		keys, vals = keys[done:], vals[done:]
	}
	return nil
}

func (s mapStore[K, V]) del(k K) error { return s.m.Delete(k) }

func (s mapStore[K, V]) each(fn func(K, V) error) error {
	var (
		k K
		v V
	)
	it := s.m.Iterate()
	for it.Next(&k, &v) {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return it.Err()
}

func percpuSums(m *ebpf.Map, n int) func() ([]uint64, error) {
	return func() ([]uint64, error) {
		sums := make([]uint64, n)
		for i := range sums {
			var per []uint64
			if err := m.Lookup(uint32(i), &per); err != nil {
				return nil, err
			}
			for _, x := range per {
				sums[i] += x
			}
		}
		return sums, nil
	}
}
