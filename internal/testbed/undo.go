package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/clsact"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Undo is one change a method makes to a host outside the devices, files
// and processes its run owns (which agent.CleanSite finds by their
// names), put in the site's journal before the change is made and taken
// out once the method has reverted it. When the controller, the agent or
// the connection dies in between, agent.CleanSite ("tunbench clean --run
// ID --site NAME", run over a new connection) applies what the journal
// still holds, so the host gets back what the method took: the underlay
// device's tc programs, addresses and sysctls.
type Undo struct {
	// Kind is UndoClsact (take the tc filters Filters off Dev's clsact
	// qdisc, and the qdisc itself when QdiscCreated and nothing else is
	// left on it; see ClsactUndo), UndoAddrs (put Addrs back on Dev, taking
	// them off From first when it still exists, set Dev up and put its
	// Routes back), UndoSysctl (write
	// Value to Path under /proc/sys) or UndoUnpin (remove the BPF pin
	// directory Path under BPFPinRoot), UndoRoute (delete the host
	// route Addrs[0] of protocol RouteProtocol from table Table) or
	// UndoDevice (put Dev back to MTU and Features, the host's own device
	// a run with ssh.host_changes changed) or UndoDelLink (delete Dev, a
	// device a daemon of the run creates under a name of its own, such
	// as OVS's ovs-netdev, when it is there).
	Kind  string   `json:"kind"`
	Dev   string   `json:"dev,omitempty"`
	From  string   `json:"from,omitempty"`
	Addrs []string `json:"addrs,omitempty"` // prefixes, e.g. 198.18.0.1/24
	// Flags are the addresses' IFA_F_* flags, in the order of Addrs.
	Flags []int  `json:"flags,omitempty"`
	Path  string `json:"path,omitempty"`
	Value string `json:"value,omitempty"`
	Table int    `json:"table,omitempty"`
	// MTU and Features are the device's original state (UndoDevice);
	// Features as `ethtool -k` names them.
	MTU      int             `json:"mtu,omitempty"`
	Features map[string]bool `json:"features,omitempty"`
	// Port is the UDP port of UndoDelFou.
	Port int `json:"port,omitempty"`
	// Routes (UndoAddrs) are routes through Dev to put back once its
	// addresses are back and it is up: the kernel drops every route
	// through a device that goes down.
	Routes []JournalRoute `json:"routes,omitempty"`
	// Filters (UndoClsact) are the tc filters the run adds to Dev's
	// clsact qdisc: apply removes each only while the filter at that
	// parent, priority and handle is a BPF filter named tunbench...
	// (running program ProgID, when recorded). QdiscCreated says the run
	// creates the qdisc (Dev had none): apply removes it too once no
	// filter is left on it. An entry without either (written by a
	// tunbench that always attached at priority 1 handle 1) stands for
	// clsact.Legacy: tunbench_* filters at pref 1 handle 1, the qdisc
	// kept.
	Filters      []clsact.Filter `json:"filters,omitempty"`
	QdiscCreated bool            `json:"qdisc_created,omitempty"`
	// Priority (UndoDelRule, UndoDelTable), when not 0, narrows the rules
	// to Table that go to those of that priority: the one rule a run's
	// daemon adds, not a host's own rule to the same table. An entry
	// without it (an older journal) matches every rule to Table.
	Priority int `json:"priority,omitempty"`
}

// ClsactUndo is the UndoClsact entry that takes a back.
func ClsactUndo(a clsact.Attachment) Undo {
	return Undo{Kind: UndoClsact, Dev: a.Dev, Filters: a.Filters, QdiscCreated: a.QdiscCreated}
}

// Attachment is what an UndoClsact entry takes back (see Filters).
func (u Undo) Attachment() clsact.Attachment {
	if len(u.Filters) == 0 && !u.QdiscCreated {
		return clsact.Legacy(u.Dev)
	}
	return clsact.Attachment{Dev: u.Dev, QdiscCreated: u.QdiscCreated, Filters: u.Filters}
}

// ReadUndo reads the entry name of the journal of dir; ok is false when
// there is none.
func ReadUndo(dir, name string) (u Undo, ok bool, err error) { return readUndo(dir, name) }

// The kinds of Undo.
const (
	UndoClsact = "clsact"
	UndoAddrs  = "addrs"
	UndoSysctl = "sysctl"
	UndoUnpin  = "unpin"
	UndoRoute  = "route"
	// UndoDelLink is recorded only for a device that did not exist
	// before the run.
	UndoDelLink = "dellink"
	// UndoDelAddr takes Addrs, which the run added, off Dev.
	UndoDelAddr = "deladdr"
	// UndoDelRule deletes the routing rules (IPv4 and IPv6) that look up
	// Table (at Priority, when set), which a daemon of the run adds; it
	// is recorded only when the host had no such rule.
	UndoDelRule = "delrule"
	// UndoDelTable deletes every route (IPv4 and IPv6) in Table and the
	// rules to Table at Priority: a routing table of the run's own, which
	// no rule referenced and no route was in when the run chose it (the
	// IPsec methods' charon table).
	UndoDelTable = "deltable"
	// UndoPromisc turns promiscuous mode of Dev off: a daemon of the run
	// (ovs-vswitchd, for a port of its bridge) turns it on and, killed,
	// leaves it on. It is recorded only when Dev was not promiscuous
	// before.
	UndoPromisc = "promisc"
	// UndoDelFou closes the FOU or GUE receive port Port of family Value
	// ("ipv4" or "ipv6") that the fou and gue methods open in the
	// endpoint's namespace: per-namespace kernel state no device name
	// leads to.
	UndoDelFou = "delfou"
)

// RouteProtocol marks the routes tunbench adds to a host's own tables
// (the rtm_protocol of "ip route", shown as 241): a route is deleted only
// with its protocol, so an undo never takes a route the host made.
const RouteProtocol = 241

// DelHostRoute deletes the host route dst (a /32 or /128 prefix) of
// protocol RouteProtocol from table; a route that is gone already (with
// its device, or never added) is not an error, and deleted says so.
func DelHostRoute(h *netlink.Handle, dst netip.Prefix, table int) (deleted bool, err error) {
	// Scope nowhere matches the route whatever its scope (as ip route
	// del does); the protocol makes sure it is tunbench's.
	err = h.RouteDel(&netlink.Route{Dst: PrefixNet(dst), Table: table, Protocol: RouteProtocol, Scope: unix.RT_SCOPE_NOWHERE})
	if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete route %s from table %d: %w", dst, table, err)
	}
	return true, nil
}

// undoDir is where a site directory keeps its journal.
func undoDir(dir string) string { return filepath.Join(dir, "undo") }

// WriteUndo records u as name in the journal of the site directory dir on
// this host. Write it before making the change: undoing a change that was
// never made is harmless.
func WriteUndo(dir, name string, u Undo) error {
	if dir == "" {
		return errors.New("testbed: journal: no site directory")
	}
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(undoDir(dir), 0o700); err != nil {
		return fmt.Errorf("testbed: journal: %w", err)
	}
	return os.WriteFile(filepath.Join(undoDir(dir), name), data, 0o600)
}

// HasUndo reports whether the journal of dir holds name: a change made
// and not yet reverted.
func HasUndo(dir, name string) bool {
	_, err := os.Stat(filepath.Join(undoDir(dir), name))
	return err == nil
}

// DropUndo takes name out of the journal of dir once the change is
// reverted.
func DropUndo(dir, name string) error {
	err := os.Remove(filepath.Join(undoDir(dir), name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("testbed: journal: %w", err)
	}
	_ = os.Remove(undoDir(dir))
	return nil
}

// RecordUndo is WriteUndo into the endpoint's site directory on its host.
func (e *Endpoint) RecordUndo(name string, u Undo) error {
	_, err := opRecordUndo.Call(context.Background(), e, undoArgs{Name: name, Undo: u})
	return err
}

// ForgetUndo is DropUndo in the endpoint's site directory on its host.
func (e *Endpoint) ForgetUndo(name string) error {
	_, err := opForgetUndo.Call(context.Background(), e, undoArgs{Name: name})
	return err
}

// ApplyUndo applies the journal entry name of the endpoint's site
// directory on its host, in its namespace, and takes it out: what a
// change that went wrong owes the host, put back at once rather than
// at the run's end. An entry that is not there is nothing to do. It
// says what it put back.
func (e *Endpoint) ApplyUndo(name string) (string, error) {
	return opApplyUndo.Call(context.Background(), e, undoArgs{Name: name})
}

type undoArgs struct {
	Name string
	Undo Undo
}

var (
	// An endpoint without a directory (a bare test endpoint) keeps no
	// journal.
	opRecordUndo = NewOp("journal.record", func(_ context.Context, ep *Endpoint, a undoArgs) (struct{}, error) {
		if ep.Dir == "" {
			return struct{}{}, nil
		}
		return struct{}{}, WriteUndo(ep.Dir, a.Name, a.Undo)
	})
	opForgetUndo = NewOp("journal.forget", func(_ context.Context, ep *Endpoint, a undoArgs) (struct{}, error) {
		if ep.Dir == "" {
			return struct{}{}, nil
		}
		return struct{}{}, DropUndo(ep.Dir, a.Name)
	})
	opApplyUndo = NewOp("journal.apply", func(_ context.Context, ep *Endpoint, a undoArgs) (string, error) {
		if ep.Dir == "" {
			return "", nil
		}
		u, ok, err := readUndo(ep.Dir, a.Name)
		if err != nil || !ok {
			return "", err
		}
		var what string
		err = ep.Do(func() error {
			h, err := netlink.NewHandle()
			if err != nil {
				return fmt.Errorf("netlink: %w", err)
			}
			defer h.Close()
			what, err = u.apply(h)
			return err
		})
		if err != nil {
			return what, fmt.Errorf("undo %s: %w", a.Name, err)
		}
		return what, DropUndo(ep.Dir, a.Name)
	})
)

// AddrsUndo is the Undo that puts addrs back on dev (from from).
func AddrsUndo(dev, from string, addrs []netlink.Addr) Undo {
	u := Undo{Kind: UndoAddrs, Dev: dev, From: from}
	for _, a := range addrs {
		u.Addrs = append(u.Addrs, a.IPNet.String())
		u.Flags = append(u.Flags, a.Flags)
	}
	return u
}

// RestoreOrder is the order in which to add back addresses that a device
// listed in the order given (v6[i]: address i is IPv6), so that it lists
// them in that order again: the kernel appends an IPv4 address after
// those of the device but puts an IPv6 one before the others of its
// scope, so IPv4 addresses go back first to last and IPv6 ones last to
// first.
func RestoreOrder(v6 []bool) []int {
	var order []int
	for i := range v6 {
		if !v6[i] {
			order = append(order, i)
		}
	}
	for i := len(v6) - 1; i >= 0; i-- {
		if v6[i] {
			order = append(order, i)
		}
	}
	return order
}

// TakeOrder is the order in which to take addrs (as a device lists
// them) off the device so that none takes another with it, and so that
// those still on it after a take that stopped part way, with the taken
// ones added back in RestoreOrder, list as before: the reverse of
// RestoreOrder (IPv6 addresses first to last, IPv4 ones last to first),
// every IPv4 secondary (IFA_F_SECONDARY: a further address in the subnet
// of a primary, which the kernel lists after the primaries) before the
// primaries. Taking a primary off first would make the kernel delete
// its secondaries with it (unless the device's promote_secondaries is
// set), which tunbench never changes.
func TakeOrder(addrs []netlink.Addr) []int {
	v6 := make([]bool, len(addrs))
	for i, a := range addrs {
		v6[i] = a.IP.To4() == nil
	}
	order := RestoreOrder(v6)
	slices.Reverse(order)
	secondary := func(i int) bool { return !v6[i] && addrs[i].Flags&unix.IFA_F_SECONDARY != 0 }
	slices.SortStableFunc(order, func(i, j int) int {
		switch si, sj := secondary(i), secondary(j); {
		case si && !sj:
			return -1
		case sj && !si:
			return 1
		}
		return 0
	})
	return order
}

// TakeOff is those of listed (a device's addresses, as it lists them)
// that are in addrs (by address and prefix length), in the order in
// which to take them off the device (TakeOrder of listed: the device's
// own secondaries first).
func TakeOff(listed, addrs []netlink.Addr) []netlink.Addr {
	listed = slices.DeleteFunc(slices.Clone(listed), func(l netlink.Addr) bool {
		return !slices.ContainsFunc(addrs, func(a netlink.Addr) bool { return a.IPNet.String() == l.IPNet.String() })
	})
	var out []netlink.Addr
	for _, i := range TakeOrder(listed) {
		out = append(out, listed[i])
	}
	return out
}

// ApplyJournal applies, through h (in its network namespace), every
// change the journal of the site directory dir still holds, and returns
// what it restored. The entries stay: the caller removes the directory.
func ApplyJournal(h *netlink.Handle, dir string) ([]Leftover, error) {
	ents, err := os.ReadDir(undoDir(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("testbed: journal: %w", err)
	}
	var done []Leftover
	var errs []error
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(undoDir(dir), e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var u Undo
		if err := json.Unmarshal(data, &u); err != nil {
			errs = append(errs, fmt.Errorf("testbed: journal entry %s: %w", e.Name(), err))
			continue
		}
		what, err := u.apply(h)
		if err != nil {
			errs = append(errs, fmt.Errorf("testbed: undo %s: %w", e.Name(), err))
			continue
		}
		if what != "" {
			done = append(done, Leftover{"restored", what})
		}
	}
	return done, errors.Join(errs...)
}

// apply reverts one change; it says what it restored, or "" when there
// was nothing left to revert.
func (u Undo) apply(h *netlink.Handle) (string, error) {
	switch u.Kind {
	case UndoClsact:
		return u.applyClsact(h)
	case UndoAddrs:
		return u.applyAddrs(h)
	case UndoSysctl:
		return u.applySysctl()
	case UndoUnpin:
		return u.applyUnpin()
	case UndoDevice:
		return u.applyDevice(h)
	case UndoDelAddr:
		return u.applyDelAddr(h)
	case UndoDelRule:
		return u.applyDelRule(h)
	case UndoDelTable:
		return u.applyDelTable(h)
	case UndoDelLink:
		return u.applyDelLink(h)
	case UndoRoute:
		return u.applyRoute(h)
	case UndoDelFou:
		return delFou(u)
	case UndoPromisc:
		return u.applyPromisc(h)
	}
	return "", fmt.Errorf("unknown kind %q", u.Kind)
}

// applyClsact detaches the run's tc filters from Dev (and its clsact qdisc
// when the run created it) (UndoClsact).
func (u Undo) applyClsact(h *netlink.Handle) (string, error) {
	r, err := clsact.Remove(h, u.Attachment())
	if err != nil || r.Empty() {
		return "", err
	}
	switch {
	case r.Qdisc && len(r.Filters) == 0:
		return "clsact qdisc removed from " + u.Dev, nil
	case r.Qdisc:
		return "tc programs detached from " + u.Dev + " and its clsact qdisc removed", nil
	}
	return "tc programs detached from " + u.Dev, nil
}

// applyAddrs puts Addrs back on Dev, taking them off From first, sets Dev
// up and puts its Routes back (UndoAddrs).
func (u Undo) applyAddrs(h *netlink.Handle) (string, error) {
	link, err := h.LinkByName(u.Dev)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", u.Dev, err)
	}
	have, err := h.AddrList(link, netlink.FAMILY_ALL)
	if err != nil {
		return "", fmt.Errorf("list addresses of %s: %w", u.Dev, err)
	}
	from, _ := h.LinkByName(u.From)
	addrs, v6, err := u.netlinkAddrs()
	if err != nil {
		return "", err
	}
	// Every address leaves From before any goes back on Dev, so none
	// is on both, and From's secondaries leave before their primary
	// (TakeOff), which would take them with it.
	if from != nil {
		listed, err := h.AddrList(from, netlink.FAMILY_ALL)
		if err != nil {
			listed = addrs
		}
		for _, a := range TakeOff(listed, addrs) {
			_ = h.AddrDel(from, &netlink.Addr{IPNet: a.IPNet})
		}
	}
	var back []string
	for _, i := range RestoreOrder(v6) {
		a := addrs[i]
		if slices.ContainsFunc(have, func(h netlink.Addr) bool { return h.IPNet.String() == a.IPNet.String() }) {
			continue
		}
		if err := h.AddrAdd(link, &a); err != nil {
			return "", fmt.Errorf("put %s back on %s: %w", u.Addrs[i], u.Dev, err)
		}
		back = append(back, u.Addrs[i])
	}
	if err := h.LinkSetUp(link); err != nil {
		return "", fmt.Errorf("set %s up: %w", u.Dev, err)
	}
	routes, err := PutRoutesBack(h, link, u.Routes)
	var notes []string
	if len(back) > 0 {
		notes = append(notes, "addresses "+strings.Join(back, ", "))
	}
	if n := routesNote(routes); n != "" {
		notes = append(notes, n)
	}
	if len(notes) == 0 {
		return "", err
	}
	return strings.Join(notes, " and ") + " on " + u.Dev, err
}

// netlinkAddrs is Addrs with their Flags, and which of them are IPv6.
func (u Undo) netlinkAddrs() ([]netlink.Addr, []bool, error) {
	addrs := make([]netlink.Addr, len(u.Addrs))
	v6 := make([]bool, len(u.Addrs))
	for i, s := range u.Addrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, nil, fmt.Errorf("address %q: %w", s, err)
		}
		addrs[i] = netlink.Addr{IPNet: PrefixNet(p)}
		if i < len(u.Flags) {
			addrs[i].Flags = u.Flags[i]
		}
		v6[i] = p.Addr().Is6()
	}
	return addrs, v6, nil
}

// applySysctl writes Value back to the sysctl Path (UndoSysctl).
func (u Undo) applySysctl() (string, error) {
	if !strings.HasPrefix(filepath.Clean(u.Path), "/proc/sys/") {
		return "", fmt.Errorf("%s is not a sysctl", u.Path)
	}
	old, err := os.ReadFile(u.Path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil // its device is gone
	}
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(string(old)) == u.Value {
		return "", nil
	}
	if err := os.WriteFile(u.Path, []byte(u.Value+"\n"), 0o644); err != nil {
		return "", err
	}
	return u.Path + " = " + u.Value, nil
}

// applyUnpin removes the BPF pin directory Path (UndoUnpin).
func (u Undo) applyUnpin() (string, error) {
	if rel, err := filepath.Rel(BPFPinRoot, u.Path); err != nil || strings.HasPrefix(rel, "..") || rel == "." {
		return "", fmt.Errorf("%s is not under %s", u.Path, BPFPinRoot)
	}
	if _, err := os.Stat(u.Path); err != nil {
		return "", nil
	}
	if err := os.RemoveAll(u.Path); err != nil {
		return "", err
	}
	_ = os.Remove(BPFPinRoot)
	return "bpf pins " + u.Path, nil
}

// applyDevice puts Dev back to MTU and Features (UndoDevice).
func (u Undo) applyDevice(h *netlink.Handle) (string, error) {
	if _, err := h.LinkByName(u.Dev); err != nil {
		return "", fmt.Errorf("find %s: %w", u.Dev, err)
	}
	changed, err := restoreDevice(netns.None(), u.Dev, DeviceState{MTU: u.MTU, Features: u.Features})
	if err != nil {
		return "", err
	}
	if len(changed) == 0 {
		return "", nil
	}
	return u.Dev + " " + strings.Join(changed, ", "), nil
}

// applyDelAddr takes Addrs, which the run added, off Dev (UndoDelAddr).
func (u Undo) applyDelAddr(h *netlink.Handle) (string, error) {
	link, err := h.LinkByName(u.Dev)
	if err != nil {
		return "", nil // the device is gone, and its addresses with it
	}
	var gone []string
	for _, s := range u.Addrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return "", fmt.Errorf("address %q: %w", s, err)
		}
		err = h.AddrDel(link, &netlink.Addr{IPNet: PrefixNet(p)})
		if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("take %s off %s: %w", s, u.Dev, err)
		}
		gone = append(gone, s)
	}
	if len(gone) == 0 {
		return "", nil
	}
	return "address " + strings.Join(gone, ", ") + " taken off " + u.Dev, nil
}

// applyDelRule deletes the rules to Table, at Priority when set
// (UndoDelRule).
func (u Undo) applyDelRule(h *netlink.Handle) (string, error) {
	n, err := delRules(h, u.Table, u.Priority)
	if n == 0 {
		return "", err
	}
	return fmt.Sprintf("%d rules to table %d removed", n, u.Table), err
}

// applyDelTable flushes Table, a table of the run's own, and deletes the
// rules to it (UndoDelTable).
func (u Undo) applyDelTable(h *netlink.Handle) (string, error) {
	if u.Table == 0 || u.Table == unix.RT_TABLE_MAIN || u.Table == unix.RT_TABLE_LOCAL || u.Table == unix.RT_TABLE_DEFAULT {
		return "", fmt.Errorf("table %d is not a run's own", u.Table)
	}
	if u.Priority == 0 {
		return "", fmt.Errorf("table %d: no rule priority", u.Table)
	}
	routes, err := flushTable(h, u.Table)
	if err != nil {
		return "", err
	}
	rules, err := delRules(h, u.Table, u.Priority)
	if routes+rules == 0 {
		return "", err
	}
	return fmt.Sprintf("table %d (%d routes) and %d rules to it removed", u.Table, routes, rules), err
}

// applyDelLink deletes Dev, a device a daemon of the run created
// (UndoDelLink).
func (u Undo) applyDelLink(h *netlink.Handle) (string, error) {
	link, err := h.LinkByName(u.Dev)
	if err != nil {
		return "", nil // never created, or gone
	}
	if err := h.LinkDel(link); err != nil {
		return "", fmt.Errorf("delete %s: %w", u.Dev, err)
	}
	return "device " + u.Dev + " removed", nil
}

// applyRoute deletes the host route Addrs[0] from Table (UndoRoute).
func (u Undo) applyRoute(h *netlink.Handle) (string, error) {
	if len(u.Addrs) != 1 {
		return "", fmt.Errorf("route undo with %d destinations, want 1", len(u.Addrs))
	}
	dst, err := netip.ParsePrefix(u.Addrs[0])
	if err != nil {
		return "", fmt.Errorf("route %q: %w", u.Addrs[0], err)
	}
	deleted, err := DelHostRoute(h, dst, u.Table)
	if err != nil || !deleted {
		return "", err
	}
	return fmt.Sprintf("route %s removed from table %d", dst, u.Table), nil
}

// applyPromisc turns promiscuous mode of Dev off (UndoPromisc).
func (u Undo) applyPromisc(h *netlink.Handle) (string, error) {
	link, err := h.LinkByName(u.Dev)
	if err != nil {
		return "", nil // the device is gone
	}
	if link.Attrs().Promisc == 0 && link.Attrs().RawFlags&unix.IFF_PROMISC == 0 {
		return "", nil
	}
	if err := h.SetPromiscOff(link); err != nil {
		return "", fmt.Errorf("turn promiscuous mode of %s off: %w", u.Dev, err)
	}
	return "promiscuous mode of " + u.Dev + " off", nil
}

// delRules deletes the rules (IPv4 and IPv6) that look up table, only
// those of priority prio unless prio is 0, and says how many went.
func delRules(h *netlink.Handle, table, prio int) (int, error) {
	n := 0
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rules, err := h.RuleList(fam)
		if err != nil {
			return n, fmt.Errorf("list rules: %w", err)
		}
		for _, r := range rules {
			if r.Table != table || prio != 0 && r.Priority != prio {
				continue
			}
			if err := h.RuleDel(&r); err != nil && !errors.Is(err, unix.ENOENT) {
				return n, fmt.Errorf("delete the rule to table %d: %w", table, err)
			}
			n++
		}
	}
	return n, nil
}

// flushTable deletes every route (IPv4 and IPv6) in table, as "ip route
// flush table" does, and says how many went.
func flushTable(h *netlink.Handle, table int) (int, error) {
	n := 0
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := h.RouteListFiltered(fam, &netlink.Route{Table: table}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return n, fmt.Errorf("list routes of table %d: %w", table, err)
		}
		for _, r := range routes {
			if err := h.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
				return n, fmt.Errorf("delete route %s from table %d: %w", r.Dst, table, err)
			}
			n++
		}
	}
	return n, nil
}

// delFou closes the FOU/GUE port of u in this thread's network namespace
// (the netlink package's own handle); a port or a fou module that is gone
// leaves nothing to do (the kernel answers EINVAL for a port it does not
// know, ENOENT without the generic netlink family).
func delFou(u Undo) (string, error) {
	family := unix.AF_INET
	if u.Value == "ipv6" {
		family = unix.AF_INET6
	}
	err := netlink.FouDel(netlink.Fou{Family: family, Port: u.Port})
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("close fou port %d (%s): %w", u.Port, u.Value, err)
	}
	return fmt.Sprintf("fou port %d (%s) closed", u.Port, u.Value), nil
}
