// Package clsact puts tunbench's tc filters on a device's clsact qdisc
// next to whatever the host has there, and takes off only what it put
// there: it never replaces the host's qdisc or a filter of the host's,
// and removes the qdisc only when it created it and nothing else is left
// on it.
//
// Attaching is two steps, so that the change can be journalled before it
// is made: Plan looks at the device and says what Add will do (which
// free priorities the filters get, whether the qdisc has to be created);
// Add does it. Remove undoes an Attachment, for a teardown as for a
// journal entry applied after a crash.
package clsact

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NamePrefix starts the name of every filter tunbench attaches; Remove
// deletes no filter whose name lacks it.
const NamePrefix = "tunbench"

// The clsact parents, as a Filter names them.
const (
	Ingress = "ingress"
	Egress  = "egress"
)

// Handle is the handle of every filter tunbench adds (tc's "handle 1").
const Handle = 1

// Filter is one direct-action BPF filter tunbench adds to a clsact
// qdisc. It is part of journal entries (testbed.Undo), hence the JSON
// tags.
type Filter struct {
	// Parent is Ingress or Egress.
	Parent string `json:"parent"`
	// Priority is tc's pref; Handle is the filter's handle within it.
	Priority uint16 `json:"priority"`
	Handle   uint32 `json:"handle"`
	// Name is the filter's name (NamePrefix...).
	Name string `json:"name"`
	// ProgID, when not 0, is the ID of the program the filter runs:
	// Remove then deletes the filter only if it still runs that program.
	ProgID uint32 `json:"prog_id,omitempty"`
}

func (f Filter) String() string {
	return fmt.Sprintf("%s (%s pref %d handle %d)", f.Name, f.Parent, f.Priority, f.Handle)
}

// Attachment is what Add does to Dev and Remove takes back.
type Attachment struct {
	Dev string
	// QdiscCreated says the run creates (or created) Dev's clsact qdisc:
	// Dev had none.
	QdiscCreated bool
	Filters      []Filter
}

// Program is one filter to attach: its name, its parent and the program's
// file descriptor and ID.
type Program struct {
	Name   string
	Parent string
	FD     int
	ID     uint32
}

func parentHandle(p string) (uint32, error) {
	switch p {
	case Ingress:
		return netlink.HANDLE_MIN_INGRESS, nil
	case Egress:
		return netlink.HANDLE_MIN_EGRESS, nil
	}
	return 0, fmt.Errorf("clsact: unknown parent %q, want ingress or egress", p)
}

// HasQdisc reports whether link has a clsact qdisc.
func HasQdisc(h *netlink.Handle, link netlink.Link) (bool, error) {
	qs, err := h.QdiscList(link)
	if err != nil {
		return false, fmt.Errorf("clsact: list qdiscs of %s: %w", link.Attrs().Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_CLSACT && q.Type() == "clsact" {
			return true, nil
		}
	}
	return false, nil
}

// filters lists the filters on parent of link; a device without a
// clsact qdisc has none.
func filters(h *netlink.Handle, link netlink.Link, parent string) ([]netlink.Filter, error) {
	ph, err := parentHandle(parent)
	if err != nil {
		return nil, err
	}
	fs, err := h.FilterList(link, ph)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clsact: list %s filters of %s: %w", parent, link.Attrs().Name, err)
	}
	return fs, nil
}

// Plan says how Add would attach progs to dev now: on dev's clsact qdisc
// when it has one (QdiscCreated false), on a new one otherwise; each
// filter at the lowest priority from 1 upward that no filter of its
// parent uses, with handle Handle.
//
// The consequence of a free priority rather than a fixed one: tc runs a
// parent's filters in priority order, so a host filter at a lower
// priority than tunbench's runs first, and one that ends classification
// for every packet (returns TC_ACT_OK, say) keeps tunbench's programs
// from seeing the tunnel's packets. tunbench does not move or outrank
// the host's filters; such a host cannot carry the eBPF methods.
func Plan(h *netlink.Handle, dev string, progs []Program) (Attachment, error) {
	link, err := h.LinkByName(dev)
	if err != nil {
		return Attachment{}, fmt.Errorf("clsact: find %s: %w", dev, err)
	}
	has, err := HasQdisc(h, link)
	if err != nil {
		return Attachment{}, err
	}
	a := Attachment{Dev: dev, QdiscCreated: !has}
	used := map[string][]uint16{}
	for _, p := range progs {
		if _, ok := used[p.Parent]; !ok && has {
			fs, err := filters(h, link, p.Parent)
			if err != nil {
				return Attachment{}, err
			}
			for _, f := range fs {
				used[p.Parent] = append(used[p.Parent], f.Attrs().Priority)
			}
		}
		prio := uint16(1)
		for slices.Contains(used[p.Parent], prio) {
			if prio == 0xffff {
				return Attachment{}, fmt.Errorf("clsact: no free %s priority on %s", p.Parent, dev)
			}
			prio++
		}
		used[p.Parent] = append(used[p.Parent], prio)
		a.Filters = append(a.Filters, Filter{Parent: p.Parent, Priority: prio, Handle: Handle, Name: p.Name, ProgID: p.ID})
	}
	return a, nil
}

// Add makes a: it creates dev's clsact qdisc when a.QdiscCreated (when
// one appeared since Plan, it uses that one and clears a.QdiscCreated,
// so the caller can correct its journal), then adds each filter, running
// progs[i].FD, without replacing anything: a priority taken since Plan
// fails the attach.
func Add(h *netlink.Handle, a *Attachment, progs []Program) error {
	if len(progs) != len(a.Filters) {
		return fmt.Errorf("clsact: %d programs for %d filters", len(progs), len(a.Filters))
	}
	link, err := h.LinkByName(a.Dev)
	if err != nil {
		return fmt.Errorf("clsact: find %s: %w", a.Dev, err)
	}
	idx := link.Attrs().Index
	if a.QdiscCreated {
		err := h.QdiscAdd(qdisc(idx))
		if errors.Is(err, unix.EEXIST) {
			// The host made one meanwhile (or has an ingress qdisc,
			// which the filters' add below then fails on): not ours.
			a.QdiscCreated = false
		} else if err != nil {
			return fmt.Errorf("clsact: add clsact qdisc to %s: %w", a.Dev, err)
		}
	}
	for i, f := range a.Filters {
		parent, err := parentHandle(f.Parent)
		if err != nil {
			return err
		}
		filter := &netlink.BpfFilter{
			FilterAttrs: netlink.FilterAttrs{
				LinkIndex: idx, Parent: parent, Handle: f.Handle,
				Protocol: unix.ETH_P_ALL, Priority: f.Priority,
			},
			Fd: progs[i].FD, Name: f.Name, DirectAction: true,
		}
		if err := h.FilterAdd(filter); err != nil {
			return fmt.Errorf("clsact: attach %s to %s %s at pref %d: %w", f.Name, a.Dev, f.Parent, f.Priority, err)
		}
	}
	return nil
}

func qdisc(idx int) *netlink.GenericQdisc {
	return &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
}

// Removed says what Remove took off a device.
type Removed struct {
	Filters []Filter
	Qdisc   bool
}

// Empty reports whether nothing was removed.
func (r Removed) Empty() bool { return len(r.Filters) == 0 && !r.Qdisc }

// Remove takes a back off its device: each filter of a.Filters that is
// still there and is tunbench's (a BPF filter at that priority and handle
// whose name starts with NamePrefix and, when the Filter knows it, runs
// the same program), then the clsact qdisc when a.QdiscCreated and no
// filter at all is left on it. A filter at that place that is not
// tunbench's stays, silently: the host owns it. A missing device, qdisc
// or filter is not an error (gone already).
func Remove(h *netlink.Handle, a Attachment) (Removed, error) {
	var r Removed
	link, err := h.LinkByName(a.Dev)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return r, nil
		}
		return r, fmt.Errorf("clsact: find %s: %w", a.Dev, err)
	}
	has, err := HasQdisc(h, link)
	if err != nil || !has {
		return r, err
	}
	for _, f := range a.Filters {
		fs, err := filters(h, link, f.Parent)
		if err != nil {
			return r, err
		}
		for _, got := range fs {
			bf, ok := got.(*netlink.BpfFilter)
			if !ok || !owns(f, bf) {
				continue
			}
			del := &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{
				LinkIndex: link.Attrs().Index, Parent: bf.Parent, Handle: bf.Handle,
				Priority: bf.Priority, Protocol: bf.Protocol,
			}, Fd: -1}
			err := h.FilterDel(del)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return r, fmt.Errorf("clsact: remove %s from %s: %w", f, a.Dev, err)
			}
			r.Filters = append(r.Filters, f)
		}
	}
	if !a.QdiscCreated {
		return r, nil
	}
	for _, p := range []string{Ingress, Egress} {
		fs, err := filters(h, link, p)
		if err != nil || len(fs) > 0 {
			return r, err
		}
	}
	err = h.QdiscDel(qdisc(link.Attrs().Index))
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("clsact: remove clsact qdisc from %s: %w", a.Dev, err)
	}
	r.Qdisc = true
	return r, nil
}

// owns reports whether the filter the kernel lists as got is the one f
// records.
func owns(f Filter, got *netlink.BpfFilter) bool {
	if got.Priority != f.Priority || got.Handle != f.Handle || !strings.HasPrefix(got.Name, NamePrefix) {
		return false
	}
	return f.ProgID == 0 || uint32(got.Id) == f.ProgID
}

// Legacy is what a journal entry of a tunbench that attached at fixed
// places (before the entry listed its filters) stands for: its two
// filters at priority 1 handle 1, and a qdisc that it cannot tell it
// created, so Remove leaves it.
func Legacy(dev string) Attachment {
	return Attachment{Dev: dev, Filters: []Filter{
		{Parent: Ingress, Priority: 1, Handle: Handle, Name: NamePrefix + "_ingress"},
		{Parent: Egress, Priority: 1, Handle: Handle, Name: NamePrefix + "_egress"},
	}}
}
