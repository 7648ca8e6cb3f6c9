package testbedtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// The recording edge: an endpoint whose netlink calls, commands, file
// operations and ops change nothing and are written down, one `ip`-style
// line each, so that a test compares what a method does to a host with a
// golden file (tailscale's router tests' way). It needs no root and no
// kernel support for what it records: a kernel method's set-up is checked
// on any kernel in milliseconds; the lab and the integration tests keep
// the end-to-end proof.

// RecordDir is the run directory of recording endpoints: a fixed path,
// so that the lines that name files are the same on every run.
const RecordDir = "/run/tunbench/rec"

// Recorder is the host and the netlink handle of a recording endpoint. It
// records each change as a line and answers lookups (links, addresses,
// routes, xfrm states it recorded, files it was given) from its own
// state. Key material never reaches a line: it is written <key>. It is
// safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	lines  []string
	links  []netlink.Link
	addrs  map[string][]netlink.Addr // by link name
	routes []netlink.Route
	rules  []netlink.Rule
	states []netlink.XfrmState
	pols   []netlink.XfrmPolicy
	files  map[string][]byte
	ops    map[string]func(args []byte) (line string, result []byte, err error)
	cmds   func(argv []string) Answer
	pid    int
}

var recorders atomic.Int64

// NewRecordingEndpoint returns endpoint side ("a" or "b") of a testbed
// whose underlay device dev carries the side's usual underlay addresses
// (localns.UnderlayA4... as testbedtest.New gives them), on a recording
// host, and its Recorder. The host has the links lo (index 1) and dev
// (index 2) to begin with; they are not recorded.
func NewRecordingEndpoint(side, dev string) (*testbed.Endpoint, *Recorder) {
	r := &Recorder{
		addrs: map[string][]netlink.Addr{},
		files: map[string][]byte{},
		ops:   map[string]func([]byte) (string, []byte, error){},
		pid:   1000,
	}
	r.links = []netlink.Link{
		&netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo", Index: 1, MTU: 65536}},
		&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: dev, Index: 2, MTU: 1500}},
	}
	// A host name of its own: what is cached per host (program versions)
	// is asked of each recorder.
	ep := testbed.NewEndpoint(side, fmt.Sprintf("recorder-%d", recorders.Add(1)), dev, r)
	ep.NL = r
	ep.Dir = RecordDir
	ep.Addr4, ep.Addr6 = localns.UnderlayA4, localns.UnderlayA6
	if side == "b" {
		ep.Addr4, ep.Addr6 = localns.UnderlayB4, localns.UnderlayB6
	}
	return ep, r
}

// Lines returns the lines recorded so far and forgets them.
func (r *Recorder) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.lines
	r.lines = nil
	return l
}

func (r *Recorder) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// AnswerOp makes r answer the op called name (see testbed.NewOp): fn gets
// the decoded arguments and returns the line to record ("" for none) and
// the result. An op r has no answer for fails, naming it.
func AnswerOp[A, R any](r *Recorder, name string, fn func(a A) (line string, res R, err error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[name] = func(args []byte) (string, []byte, error) {
		var a A
		if err := testbed.Decode(args, &a); err != nil {
			return "", nil, fmt.Errorf("recorder: decode arguments of %s: %w", name, err)
		}
		line, res, err := fn(a)
		if err != nil {
			return line, nil, err
		}
		out, err := testbed.Encode(res)
		return line, out, err
	}
}

// Answer is how a command started on a recording host behaves.
type Answer struct {
	// Output is what it writes (to its output file for a daemon).
	Output string
	// Err is its exit status.
	Err error
	// Runs keeps it running until it is signalled: a daemon. OnStop, when
	// set, runs then (to forget a device the daemon removes as it exits).
	Runs   bool
	OnStop func()
}

// AnswerCommands makes r answer the commands started on it with fn's
// answer (by default: no output, success at once).
func (r *Recorder) AnswerCommands(fn func(argv []string) Answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cmds = fn
}

// Host: commands, ops and files.

// Local is false: the recorder is a host of its own, reached by ops.
func (r *Recorder) Local() bool { return false }

// Start records the command (its environment and argv) as an "exec" line
// and runs nothing: the process
// answers as AnswerCommands says.
func (r *Recorder) Start(_ *testbed.Endpoint, c *testbed.Cmd) (testbed.Proc, error) {
	r.mu.Lock()
	cmds := r.cmds
	r.pid++
	pid := r.pid
	r.mu.Unlock()
	var a Answer
	if cmds != nil {
		a = cmds(c.Args)
	}
	// The environment the command gets, as shell assignments before it.
	line := shellJoin(append(slices.Clone(c.Env), c.Args...))
	// Input of a known length (a strings.Reader, a bytes.Buffer: not a
	// StdinPipe) is written as a here-document after the command.
	var input []string
	if _, ok := c.Stdin.(interface{ Len() int }); ok {
		data, err := io.ReadAll(c.Stdin)
		if err != nil {
			return nil, err
		}
		input = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		line += " <<EOF"
	}
	if a.Runs {
		r.record("exec %s &  # pid %d", line, pid)
	} else {
		r.record("exec %s", line)
	}
	if input != nil {
		for _, l := range input {
			r.record("%s", l)
		}
		r.record("EOF")
	}
	if c.OutputFile != "" {
		r.mu.Lock()
		r.files[c.OutputFile] = append(r.files[c.OutputFile], a.Output...)
		r.mu.Unlock()
	} else if c.Stdout != nil {
		_, _ = io.WriteString(c.Stdout, a.Output)
	}
	p := &recordedProc{r: r, pid: pid, err: a.Err, onStop: a.OnStop, done: make(chan struct{})}
	if !a.Runs {
		close(p.done)
	}
	return p, nil
}

// recordedProc is a process on a recording host: one that has exited, or
// a daemon that runs until it is signalled.
type recordedProc struct {
	r      *Recorder
	pid    int
	err    error
	onStop func()
	once   sync.Once
	done   chan struct{}
}

func (p *recordedProc) Pid() int { return p.pid }

func (p *recordedProc) Wait() error {
	<-p.done
	return p.err
}

// Signal records "kill" and stops a running daemon; a process that has
// exited ignores it.
func (p *recordedProc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.r.record("kill -%s %d", strings.TrimPrefix(unix.SignalName(sig), "SIG"), p.pid)
	p.once.Do(func() {
		if p.onStop != nil {
			p.onStop()
		}
		close(p.done)
	})
	return nil
}

// shellJoin writes argv as a shell would read it back: arguments with
// spaces or shell characters in single quotes.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// recFileArgs has the fields of testbed's file op arguments (gob matches
// fields by name).
type recFileArgs struct {
	Path string
	Data []byte
	Perm os.FileMode
}

// Call answers the file ops from r's files and the others as AnswerOp
// said.
func (r *Recorder) Call(_ context.Context, _ *testbed.Endpoint, name string, args []byte) ([]byte, error) {
	switch name {
	case "fs.read", "fs.write", "fs.mkdir", "fs.remove":
		var a recFileArgs
		if err := testbed.Decode(args, &a); err != nil {
			return nil, err
		}
		switch name {
		case "fs.read":
			r.mu.Lock()
			data, ok := r.files[a.Path]
			r.mu.Unlock()
			if !ok {
				return nil, &os.PathError{Op: "open", Path: a.Path, Err: os.ErrNotExist}
			}
			return testbed.Encode(data)
		case "fs.write":
			r.mu.Lock()
			r.files[a.Path] = a.Data
			r.mu.Unlock()
			if key, ok := strings.CutPrefix(a.Path, "/proc/sys/"); ok {
				// A sysctl: its value is what matters.
				r.record("sysctl -w %s=%s", strings.ReplaceAll(key, "/", "."), strings.TrimSpace(string(a.Data)))
			} else {
				// Not the contents: files hold keys.
				r.record("write %s (%#o)", a.Path, a.Perm)
			}
		case "fs.mkdir":
			r.record("mkdir -p -m %#o %s", a.Perm, a.Path)
		case "fs.remove":
			r.mu.Lock()
			for p := range r.files {
				if p == a.Path || strings.HasPrefix(p, a.Path+"/") {
					delete(r.files, p)
				}
			}
			r.mu.Unlock()
			r.record("rm -rf %s", a.Path)
		}
		return testbed.Encode(struct{}{})
	case "journal.record", "journal.forget":
		// The host's journal of changes to put back (testbed.RecordUndo):
		// what is journaled, not the host's files.
		var a struct {
			Name string
			Undo testbed.Undo
		}
		if err := testbed.Decode(args, &a); err != nil {
			return nil, err
		}
		if name == "journal.record" {
			r.record("journal record %s (%s)", a.Name, a.Undo.Kind)
		} else {
			r.record("journal forget %s", a.Name)
		}
		return testbed.Encode(struct{}{})
	}
	r.mu.Lock()
	fn, ok := r.ops[name]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("recorder: no answer for op %s (AnswerOp)", name)
	}
	line, out, err := fn(args)
	if line != "" {
		r.record("%s", line)
	}
	return out, err
}

// Netlink.

// Close does nothing.
func (r *Recorder) Close() {}

func (r *Recorder) find(match func(netlink.Link) bool) (netlink.Link, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.links {
		if match(l) {
			return l, nil
		}
	}
	return nil, netlink.LinkNotFoundError{}
}

func (r *Recorder) LinkByName(name string) (netlink.Link, error) {
	return r.find(func(l netlink.Link) bool { return l.Attrs().Name == name })
}

func (r *Recorder) LinkByIndex(index int) (netlink.Link, error) {
	return r.find(func(l netlink.Link) bool { return l.Attrs().Index == index })
}

func (r *Recorder) LinkList() ([]netlink.Link, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.links), nil
}

func (r *Recorder) nameOf(index int) string {
	if l, err := r.LinkByIndex(index); err == nil {
		return l.Attrs().Name
	}
	return "if" + strconv.Itoa(index)
}

func (r *Recorder) LinkAdd(link netlink.Link) error {
	a := link.Attrs()
	if _, err := r.LinkByName(a.Name); err == nil {
		return fmt.Errorf("recorder: link %s exists: %w", a.Name, unix.EEXIST)
	}
	line := "ip link add " + a.Name
	if a.HardwareAddr != nil {
		line += " address " + a.HardwareAddr.String()
	}
	if a.Group != 0 {
		line += " group " + strconv.FormatUint(uint64(a.Group), 10)
	}
	if a.MTU != 0 {
		line += " mtu " + strconv.Itoa(a.MTU)
	}
	line += " type " + r.linkSpec(link)
	r.record("%s", line)
	r.mu.Lock()
	a.Index = len(r.links) + 1
	r.links = append(r.links, link)
	r.mu.Unlock()
	return nil
}

// linkSpec is the "type ..." part of "ip link add" for link.
func (r *Recorder) linkSpec(link netlink.Link) string {
	var f []string
	add := func(s ...string) { f = append(f, s...) }
	switch l := link.(type) {
	case *netlink.Vxlan:
		add("vxlan", "id", strconv.Itoa(l.VxlanId))
		if l.SrcAddr != nil {
			add("local", l.SrcAddr.String())
		}
		if l.Group != nil {
			add("remote", l.Group.String())
		}
		add("dstport", strconv.Itoa(l.Port))
		if l.VtepDevIndex != 0 {
			add("dev", r.nameOf(l.VtepDevIndex))
		}
		add("ttl", strconv.Itoa(l.TTL))
		if !l.Learning {
			add("nolearning")
		}
		if l.FlowBased {
			add("external")
		}
		if l.UDP6ZeroCSumRx {
			add("udp6zerocsumrx")
		}
	case *netlink.Geneve:
		add("geneve", "id", strconv.Itoa(int(l.ID)), "remote", l.Remote.String(), "dstport", strconv.Itoa(int(l.Dport)), "ttl", strconv.Itoa(int(l.Ttl)))
	case *netlink.Gretun:
		add(l.Type(), "local", l.Local.String(), "remote", l.Remote.String(), "ttl", strconv.Itoa(int(l.Ttl)))
		add(greKeys(l.IKey, l.OKey)...)
		add(pmtu(l.PMtuDisc))
		add(tunnelEncap(l.EncapType, l.EncapSport, l.EncapDport, l.EncapFlags)...)
	case *netlink.Gretap:
		add(l.Type(), "local", l.Local.String(), "remote", l.Remote.String(), "ttl", strconv.Itoa(int(l.Ttl)))
		add(greKeys(l.IKey, l.OKey)...)
		add(pmtu(l.PMtuDisc))
	case *netlink.Iptun:
		if l.FlowBased {
			add("ipip", "external")
			break
		}
		add("ipip", "mode", protoName(l.Proto), "local", l.Local.String(), "remote", l.Remote.String(), "ttl", strconv.Itoa(int(l.Ttl)))
		add(pmtu(l.PMtuDisc))
		add(tunnelEncap(l.EncapType, l.EncapSport, l.EncapDport, l.EncapFlags)...)
	case *netlink.Ip6tnl:
		if l.FlowBased {
			add("ip6tnl", "external")
			break
		}
		add("ip6tnl", "mode", protoName(l.Proto), "local", l.Local.String(), "remote", l.Remote.String(), "ttl", strconv.Itoa(int(l.Ttl)))
		if l.Flags&0x1 != 0 {
			add("encaplimit", "none")
		}
		add(tunnelEncap(l.EncapType, l.EncapSport, l.EncapDport, l.EncapFlags)...)
	case *netlink.Xfrmi:
		add("xfrm", "if_id", strconv.Itoa(int(l.Ifid)))
		if l.ParentIndex != 0 {
			add("dev", r.nameOf(l.ParentIndex))
		}
	default:
		add(link.Type())
	}
	return strings.Join(f, " ")
}

// tunnelEncap is the UDP encapsulation of an ip tunnel (FOU or GUE) as
// "ip link add" writes it; nothing for a tunnel without one.
func tunnelEncap(typ, sport, dport, flags uint16) []string {
	if typ == uint16(netlink.None) {
		return nil
	}
	f := []string{"encap", map[uint16]string{uint16(netlink.FOU): "fou", uint16(netlink.GUE): "gue"}[typ], "encap-sport"}
	if sport == 0 {
		f = append(f, "auto")
	} else {
		f = append(f, strconv.Itoa(int(sport)))
	}
	f = append(f, "encap-dport", strconv.Itoa(int(dport)))
	if flags&uint16(netlink.CSum) == 0 {
		f = append(f, "noencap-csum")
	} else {
		f = append(f, "encap-csum")
	}
	if flags&uint16(netlink.CSum6) != 0 {
		f = append(f, "encap-csum6")
	}
	return f
}

func greKeys(ikey, okey uint32) []string {
	if ikey == 0 && okey == 0 {
		return nil
	}
	return []string{"ikey", strconv.FormatUint(uint64(ikey), 10), "okey", strconv.FormatUint(uint64(okey), 10)}
}

func pmtu(p uint8) string {
	if p != 0 {
		return "pmtudisc"
	}
	return "nopmtudisc"
}

func protoName(p uint8) string {
	switch p {
	case unix.IPPROTO_IPIP:
		return "ipip"
	case unix.IPPROTO_IPV6:
		return "ip6ip6"
	case 0:
		return "any"
	}
	return "proto" + strconv.Itoa(int(p))
}

// SetFile puts a file (a sysctl under /proc/sys) on r's host without
// recording a line, for the method to read.
func (r *Recorder) SetFile(path string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files[path] = data
}

// Forget removes the link called name from r's state without recording a
// line: for a daemon that removes its device as it exits (Answer.OnStop).
func (r *Recorder) Forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.links = slices.DeleteFunc(r.links, func(l netlink.Link) bool { return l.Attrs().Name == name })
	delete(r.addrs, name)
}

// Know adds a link called name of kind to r's state without recording a
// line: for an op answer (AnswerOp) that creates a device, so that later
// lookups find it.
func (r *Recorder) Know(name, kind string) error {
	if _, err := r.LinkByName(name); err == nil {
		return fmt.Errorf("recorder: link %s exists: %w", name, unix.EEXIST)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.links = append(r.links, &netlink.GenericLink{LinkAttrs: netlink.LinkAttrs{Name: name, Index: len(r.links) + 1}, LinkType: kind})
	return nil
}

// KnowMTU sets the MTU of the link called name in r's state without
// recording a line: for a daemon that creates a device with the MTU it
// was asked for (ovs-vswitchd's mtu_request).
func (r *Recorder) KnowMTU(name string, mtu int) error {
	l, err := r.LinkByName(name)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l.Attrs().MTU = mtu
	return nil
}

func (r *Recorder) LinkDel(link netlink.Link) error {
	name := link.Attrs().Name
	r.mu.Lock()
	i := slices.IndexFunc(r.links, func(l netlink.Link) bool { return l.Attrs().Name == name })
	if i >= 0 {
		r.links = slices.Delete(r.links, i, i+1)
		delete(r.addrs, name)
	}
	r.mu.Unlock()
	if i < 0 {
		return netlink.LinkNotFoundError{}
	}
	r.record("ip link del %s", name)
	return nil
}

func (r *Recorder) LinkSetUp(link netlink.Link) error {
	r.record("ip link set %s up", link.Attrs().Name)
	return nil
}

func (r *Recorder) LinkSetDown(link netlink.Link) error {
	r.record("ip link set %s down", link.Attrs().Name)
	return nil
}

func (r *Recorder) LinkSetMTU(link netlink.Link, mtu int) error {
	r.record("ip link set %s mtu %d", link.Attrs().Name, mtu)
	if l, err := r.LinkByName(link.Attrs().Name); err == nil {
		r.mu.Lock()
		l.Attrs().MTU = mtu
		r.mu.Unlock()
	}
	return nil
}

func (r *Recorder) AddrList(link netlink.Link, family int) ([]netlink.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []netlink.Addr
	for _, a := range r.addrs[link.Attrs().Name] {
		if family == netlink.FAMILY_ALL || (family == netlink.FAMILY_V4) == (a.IP.To4() != nil) {
			out = append(out, a)
		}
	}
	return out, nil
}

func addrLine(verb string, link netlink.Link, a *netlink.Addr) string {
	line := fmt.Sprintf("ip addr %s %s dev %s", verb, a.IPNet, link.Attrs().Name)
	if a.Flags&unix.IFA_F_NODAD != 0 {
		line += " nodad"
	}
	return line
}

func (r *Recorder) AddrAdd(link netlink.Link, a *netlink.Addr) error {
	r.record("%s", addrLine("add", link, a))
	r.mu.Lock()
	r.addrs[link.Attrs().Name] = append(r.addrs[link.Attrs().Name], *a)
	r.mu.Unlock()
	return nil
}

func (r *Recorder) AddrDel(link netlink.Link, a *netlink.Addr) error {
	r.record("%s", addrLine("del", link, a))
	r.mu.Lock()
	r.addrs[link.Attrs().Name] = slices.DeleteFunc(r.addrs[link.Attrs().Name], func(x netlink.Addr) bool { return x.IPNet.String() == a.IPNet.String() })
	r.mu.Unlock()
	return nil
}

// routeSpec is a route as "ip route" prints it.
func (r *Recorder) routeSpec(rt *netlink.Route) string {
	var f []string
	add := func(s ...string) { f = append(f, s...) }
	switch rt.Type {
	case unix.RTN_BLACKHOLE:
		add("blackhole")
	case unix.RTN_UNREACHABLE:
		add("unreachable")
	}
	if rt.Dst != nil {
		add(rt.Dst.String())
	} else {
		add("default")
	}
	if rt.Encap != nil {
		add("encap", encapSpec(rt.Encap))
	}
	if rt.Gw != nil {
		add("via", rt.Gw.String())
	}
	if rt.LinkIndex != 0 {
		add("dev", r.nameOf(rt.LinkIndex))
	}
	for _, nh := range rt.MultiPath {
		add("nexthop")
		if nh.Gw != nil {
			add("via", nh.Gw.String())
		}
		add("dev", r.nameOf(nh.LinkIndex))
		if nh.Hops != 0 {
			add("weight", strconv.Itoa(nh.Hops+1))
		}
	}
	if rt.Table != 0 && rt.Table != unix.RT_TABLE_MAIN {
		add("table", strconv.Itoa(rt.Table))
	}
	if rt.Protocol != 0 {
		add("proto", strconv.Itoa(int(rt.Protocol)))
	}
	if rt.Src != nil {
		add("src", rt.Src.String())
	}
	if rt.Priority != 0 {
		add("metric", strconv.Itoa(rt.Priority))
	}
	if rt.MTU != 0 {
		add("mtu", strconv.Itoa(rt.MTU))
	}
	if rt.AdvMSS != 0 {
		add("advmss", strconv.Itoa(rt.AdvMSS))
	}
	if rt.Congctl != "" {
		add("congctl", rt.Congctl)
	}
	return strings.Join(f, " ")
}

// encapSpec is a lightweight tunnel encapsulation as "ip route" writes it.
func encapSpec(e netlink.Encap) string {
	switch e := e.(type) {
	case *netlink.SEG6Encap:
		mode := map[int]string{nl.SEG6_IPTUN_MODE_ENCAP: "encap", nl.SEG6_IPTUN_MODE_INLINE: "inline"}[e.Mode]
		var segs []string
		for _, s := range e.Segments {
			segs = append(segs, s.String())
		}
		return "seg6 mode " + mode + " segs " + strings.Join(segs, ",")
	case *netlink.SEG6LocalEncap:
		s := "seg6local action " + nl.SEG6LocalActionString(e.Action)
		if e.Flags[nl.SEG6_LOCAL_NH4] {
			s += " nh4 " + e.InAddr.String()
		}
		if e.Flags[nl.SEG6_LOCAL_NH6] {
			s += " nh6 " + e.In6Addr.String()
		}
		if e.Flags[nl.SEG6_LOCAL_TABLE] {
			s += " table " + strconv.Itoa(e.Table)
		}
		return s
	}
	return e.String()
}

func (r *Recorder) RouteAdd(rt *netlink.Route) error {
	r.record("ip route add %s", r.routeSpec(rt))
	r.mu.Lock()
	r.routes = append(r.routes, *rt)
	r.mu.Unlock()
	return nil
}

func (r *Recorder) RouteReplace(rt *netlink.Route) error {
	r.record("ip route replace %s", r.routeSpec(rt))
	r.mu.Lock()
	r.routes = slices.DeleteFunc(r.routes, func(x netlink.Route) bool { return sameDst(x.Dst, rt.Dst) && x.Table == rt.Table })
	r.routes = append(r.routes, *rt)
	r.mu.Unlock()
	return nil
}

func sameDst(a, b *net.IPNet) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.String() == b.String()
}

func (r *Recorder) RouteDel(rt *netlink.Route) error {
	r.record("ip route del %s", r.routeSpec(rt))
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.routes)
	r.routes = slices.DeleteFunc(r.routes, func(x netlink.Route) bool { return sameDst(x.Dst, rt.Dst) && x.Table == rt.Table })
	if len(r.routes) == n {
		return unix.ESRCH
	}
	return nil
}

// RouteListFiltered answers from the routes recorded, filtered by
// destination, table and device (the filters methods use).
func (r *Recorder) RouteListFiltered(family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []netlink.Route
	for _, rt := range r.routes {
		if family != netlink.FAMILY_ALL && rt.Dst != nil && (family == netlink.FAMILY_V4) != (rt.Dst.IP.To4() != nil) {
			continue
		}
		if filter != nil {
			if mask&netlink.RT_FILTER_DST != 0 && !sameDst(rt.Dst, filter.Dst) {
				continue
			}
			if mask&netlink.RT_FILTER_TABLE != 0 && rt.Table != filter.Table {
				continue
			}
			if mask&netlink.RT_FILTER_OIF != 0 && rt.LinkIndex != filter.LinkIndex {
				continue
			}
		}
		out = append(out, rt)
	}
	return out, nil
}

func (r *Recorder) RuleList(int) ([]netlink.Rule, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.rules), nil
}

func ruleSpec(rule *netlink.Rule) string {
	var f []string
	if rule.Priority >= 0 {
		f = append(f, "pref", strconv.Itoa(rule.Priority))
	}
	if rule.Src != nil {
		f = append(f, "from", rule.Src.String())
	}
	if rule.Dst != nil {
		f = append(f, "to", rule.Dst.String())
	}
	if rule.Mark != 0 {
		f = append(f, "fwmark", fmt.Sprintf("%#x", rule.Mark))
	}
	f = append(f, "lookup", strconv.Itoa(rule.Table))
	return strings.Join(f, " ")
}

func (r *Recorder) RuleAdd(rule *netlink.Rule) error {
	r.record("ip rule add %s", ruleSpec(rule))
	r.mu.Lock()
	r.rules = append(r.rules, *rule)
	r.mu.Unlock()
	return nil
}

func (r *Recorder) RuleDel(rule *netlink.Rule) error {
	r.record("ip rule del %s", ruleSpec(rule))
	return nil
}

// neigh records a neighbour entry as "ip neigh" writes it, or a bridge
// FDB entry (AF_BRIDGE) as "bridge fdb" does.
func (r *Recorder) neigh(verb string, n *netlink.Neigh) error {
	if n.Family == unix.AF_BRIDGE {
		line := fmt.Sprintf("bridge fdb %s %s dev %s", verb, n.HardwareAddr, r.nameOf(n.LinkIndex))
		if n.IP != nil {
			line += " dst " + n.IP.String()
		}
		if n.Flags&unix.NTF_SELF != 0 {
			line += " self"
		}
		if n.State&unix.NUD_PERMANENT != 0 {
			line += " permanent"
		}
		r.record("%s", line)
		return nil
	}
	line := fmt.Sprintf("ip neigh %s %s lladdr %s dev %s", verb, n.IP, n.HardwareAddr, r.nameOf(n.LinkIndex))
	if n.State&unix.NUD_PERMANENT != 0 {
		line += " nud permanent"
	}
	r.record("%s", line)
	return nil
}

func (r *Recorder) NeighAdd(n *netlink.Neigh) error    { return r.neigh("add", n) }
func (r *Recorder) NeighAppend(n *netlink.Neigh) error { return r.neigh("append", n) }

// xfrmStateSpec is an SA as "ip xfrm state" writes it, keys as <key>.
func xfrmStateSpec(s *netlink.XfrmState) string {
	f := []string{"src", s.Src.String(), "dst", s.Dst.String(), "proto", s.Proto.String(), "spi", fmt.Sprintf("%#x", s.Spi), "mode", s.Mode.String()}
	if s.Reqid != 0 {
		f = append(f, "reqid", strconv.Itoa(s.Reqid))
	}
	if s.Aead != nil {
		f = append(f, "aead", s.Aead.Name, "<key>", strconv.Itoa(s.Aead.ICVLen))
	}
	if s.Crypt != nil {
		f = append(f, "enc", s.Crypt.Name, "<key>")
	}
	if s.Auth != nil {
		f = append(f, "auth", s.Auth.Name, "<key>")
	}
	if s.Encap != nil {
		f = append(f, "encap", "espinudp", strconv.Itoa(s.Encap.SrcPort), strconv.Itoa(s.Encap.DstPort))
	}
	if s.Ifid != 0 {
		f = append(f, "if_id", strconv.Itoa(s.Ifid))
	}
	return strings.Join(f, " ")
}

func (r *Recorder) XfrmStateAdd(s *netlink.XfrmState) error {
	r.record("ip xfrm state add %s", xfrmStateSpec(s))
	r.mu.Lock()
	r.states = append(r.states, *s)
	r.mu.Unlock()
	return nil
}

func (r *Recorder) XfrmStateDel(s *netlink.XfrmState) error {
	r.record("ip xfrm state delete src %s dst %s proto %s spi %#x", s.Src, s.Dst, s.Proto, s.Spi)
	r.mu.Lock()
	r.states = slices.DeleteFunc(r.states, func(x netlink.XfrmState) bool { return x.Spi == s.Spi && x.Dst.Equal(s.Dst) })
	r.mu.Unlock()
	return nil
}

func (r *Recorder) XfrmStateList(int) ([]netlink.XfrmState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states), nil
}

func (r *Recorder) XfrmStateFlush(netlink.Proto) error {
	r.record("ip xfrm state flush")
	r.mu.Lock()
	r.states = nil
	r.mu.Unlock()
	return nil
}

func xfrmPolicySpec(p *netlink.XfrmPolicy) string {
	f := []string{"src", p.Src.String(), "dst", p.Dst.String(), "dir", p.Dir.String()}
	for _, t := range p.Tmpls {
		f = append(f, "tmpl", "src", t.Src.String(), "dst", t.Dst.String(), "proto", t.Proto.String(), "mode", t.Mode.String())
	}
	if p.Ifid != 0 {
		f = append(f, "if_id", strconv.Itoa(p.Ifid))
	}
	return strings.Join(f, " ")
}

func (r *Recorder) XfrmPolicyAdd(p *netlink.XfrmPolicy) error {
	r.record("ip xfrm policy add %s", xfrmPolicySpec(p))
	r.mu.Lock()
	r.pols = append(r.pols, *p)
	r.mu.Unlock()
	return nil
}

func (r *Recorder) XfrmPolicyDel(p *netlink.XfrmPolicy) error {
	r.record("ip xfrm policy delete %s", xfrmPolicySpec(p))
	return nil
}

func (r *Recorder) XfrmPolicyList(int) ([]netlink.XfrmPolicy, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.pols), nil
}

func (r *Recorder) XfrmPolicyFlush() error {
	r.record("ip xfrm policy flush")
	r.mu.Lock()
	r.pols = nil
	r.mu.Unlock()
	return nil
}

// GenlFamilyGet answers that every generic netlink family exists.
func (r *Recorder) GenlFamilyGet(name string) (*netlink.GenlFamily, error) {
	return &netlink.GenlFamily{Name: name}, nil
}

var _ testbed.Netlink = (*Recorder)(nil)
var _ testbed.Host = (*Recorder)(nil)

// Golden compares got with testdata/name.golden (with cmp.Diff, line by
// line); with update (the test package's -update flag) it writes got
// there instead.
func Golden(t testing.TB, name string, got []string, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	text := strings.Join(got, "\n") + "\n"
	if update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s is missing: run go test -run '%s' -update to write it", path, t.Name())
	}
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Split(string(bytes.TrimSuffix(want, []byte("\n"))), "\n"), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s\n(rewrite with go test -run '%s' -update)", path, diff, t.Name())
	}
}

// KeyText is how recorded lines write key material.
const KeyText = "<key>"

// Redact returns s with every key in keys written as KeyText.
func Redact(s string, keys ...string) string {
	for _, k := range keys {
		if k != "" {
			s = strings.ReplaceAll(s, k, KeyText)
		}
	}
	return s
}
