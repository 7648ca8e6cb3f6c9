package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/rr"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/vishvananda/netlink"
)

// recoverLead is how long a recover stream runs before the underlay goes
// down (or the rekey is forced).
const recoverLead = time.Second

// rekeyStream is how long the rekey stream goes on after its lead.
const rekeyStream = 2 * time.Second

// recoverUndo names the journal entry that puts side a's underlay back
// up, with its addresses and routes, should the run die while it is
// down; recoverKeepUndo the one that puts back its keep_addr_on_down
// (rr's flap sets it while the device is down).
func recoverUndo(dev string) string     { return "recover-" + dev }
func recoverKeepUndo(dev string) string { return "recover-" + dev + "-keep" }

// measureRecover runs the recover test: a request stream from a to b's
// tunnel address while a's underlay device goes down for down and up
// again; then, for a method.Rekeyer, a second stream across a forced
// rekey. w, when set, is told the device goes down on purpose.
func measureRecover(ctx context.Context, tb *testbed.Pair, m method.Method, env *method.Env, path *method.Path, down time.Duration, w *watch) (*result.Recover, error) {
	if down <= 0 {
		down = 2 * time.Second
	}
	echo, err := startEcho(ctx, tb.B, path.B)
	if err != nil {
		return nil, fmt.Errorf("rr echo: %w", err)
	}
	defer echo.stop()
	exe, err := tb.A.Tunbench()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary for rr stream: %w", err)
	}
	rec := &result.Recover{Dev: tb.A.Dev, Down: down.Seconds(), Interval: probeInterval.Seconds(), Tool: rr.Tool + " stream (UDP)"}
	base := []string{exe, "rr", "stream", "--addr", path.B.Unmap().String(), "--port", strconv.Itoa(echoPort),
		"--interval", probeInterval.String(), "--lead", recoverLead.String()}

	// What the flap takes down is journaled first, and put back up here
	// whatever the stream did.
	if err := journalLinkUp(tb.A); err != nil {
		return nil, err
	}
	w.setFlapping(true)
	argv := append(append([]string{}, base...), "--down", down.String(), "--flap", tb.A.Dev)
	out, runErr := tb.A.Run(ctx, argv...)
	upErr := ensureUp(tb.A)
	w.setFlapping(false)
	var r rr.StreamReport
	if jerr := json.Unmarshal(lastLine(out), &r); jerr != nil {
		return nil, errors.Join(fmt.Errorf("rr stream %q: %v: %s", joinArgs(argv), errors.Join(runErr, jerr), trim(string(out))), upErr)
	}
	rec.Down, rec.Sent, rec.Lost = r.Down, r.Sent, r.Lost
	rec.Recovered, rec.Recovery, rec.Outage, rec.Restored = r.Recovered, r.Recovery, r.Outage, r.Restored
	switch {
	case r.Error != "":
		return rec, errors.Join(fmt.Errorf("rr stream: %s", r.Error), upErr)
	case runErr != nil || upErr != nil:
		return rec, errors.Join(runErr, upErr)
	case !r.Recovered:
		return rec, fmt.Errorf("recover: no answer within 30s of %s coming back up", tb.A.Dev)
	}

	if rk, ok := m.(method.Rekeyer); ok {
		rec.Rekey = measureRekey(ctx, tb.A, rk, env, append(append([]string{}, base...), "--down", rekeyStream.String()))
		if rec.Rekey.Error != "" {
			return rec, fmt.Errorf("rekey: %s", rec.Rekey.Error)
		}
	}
	return rec, nil
}

// measureRekey runs a stream (argv) on ep and forces the rekey after the
// stream's lead.
func measureRekey(ctx context.Context, ep *testbed.Endpoint, rk method.Rekeyer, env *method.Env, argv []string) *result.Rekey {
	out := &result.Rekey{}
	st, err := startStream(ctx, ep, argv)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	var rkErr error
	select {
	case <-time.After(recoverLead):
		start := time.Now()
		out.How, rkErr = rk.Rekey(ctx, env)
		out.Took = time.Since(start).Seconds()
	case <-ctx.Done():
		rkErr = ctx.Err()
	}
	r, err := st.wait()
	if err != nil && r == nil {
		out.Error = errors.Join(rkErr, err).Error()
		return out
	}
	out.Sent, out.Lost, out.Outage = r.Sent, r.Lost, r.Outage
	if err := errors.Join(rkErr, err); err != nil {
		out.Error = err.Error()
	} else if r.Error != "" {
		out.Error = r.Error
	}
	return out
}

// rrStream is "tunbench rr stream" running on an endpoint, for a test
// that acts while it runs (the recover test's rekey, reconf).
type rrStream struct {
	ep   *testbed.Endpoint
	cmd  *testbed.Cmd
	argv []string
	out  bytes.Buffer
}

// startStream starts the request stream argv on ep.
func startStream(ctx context.Context, ep *testbed.Endpoint, argv []string) (*rrStream, error) {
	st := &rrStream{ep: ep, argv: argv}
	st.cmd = ep.Command(ctx, argv...)
	st.cmd.Stdout, st.cmd.Stderr = &st.out, &st.out
	if err := ep.Start(st.cmd); err != nil {
		return nil, err
	}
	return st, nil
}

// wait waits for the stream's end and returns its report: nil when it
// printed none (the error says why), else with the error of its exit.
func (st *rrStream) wait() (*rr.StreamReport, error) {
	waitErr := st.cmd.Wait()
	st.ep.Forget(st.cmd)
	var r rr.StreamReport
	if jerr := json.Unmarshal(lastLine(st.out.Bytes()), &r); jerr != nil {
		return nil, fmt.Errorf("rr stream %q: %v: %s", joinArgs(st.argv), errors.Join(waitErr, jerr), trim(st.out.String()))
	}
	return &r, waitErr
}

// journalLinkUp records, before the flap, the entries that put ep's
// underlay device back up with its addresses and routes, and its
// keep_addr_on_down as it is ("tunbench clean", the agent's end and a
// resumed run apply them).
func journalLinkUp(ep *testbed.Endpoint) error {
	l, err := ep.NL.LinkByName(ep.Dev)
	if err != nil {
		return fmt.Errorf("find %s: %w", ep.Dev, err)
	}
	addrs, err := nic.Dump(func() ([]netlink.Addr, error) { return ep.NL.AddrList(l, netlink.FAMILY_ALL) })
	if err != nil {
		return fmt.Errorf("list addresses of %s: %w", ep.Dev, err)
	}
	var keep []netlink.Addr
	for _, a := range addrs {
		if a.IP.IsLinkLocalUnicast() {
			continue // the kernel adds it back
		}
		keep = append(keep, a)
	}
	routes, err := rr.RoutesToPutBack(ep.NL, l)
	if err != nil {
		return err
	}
	u := testbed.AddrsUndo(ep.Dev, "", keep)
	u.Routes = testbed.JournalRoutes(routes)
	if err := ep.RecordUndo(recoverUndo(ep.Dev), u); err != nil {
		return fmt.Errorf("journal %s: %w", ep.Dev, err)
	}
	path := rr.KeepAddrPath(ep.Dev)
	if old, err := ep.ReadFile(path); err == nil {
		if err := ep.RecordUndo(recoverKeepUndo(ep.Dev), testbed.Undo{Kind: testbed.UndoSysctl, Path: path, Value: strings.TrimSpace(string(old))}); err != nil {
			return fmt.Errorf("journal %s: %w", path, err)
		}
	}
	return nil
}

// ensureUp puts ep's underlay device back as it was before the flap
// (the stream did, unless it died while the device was down: up, with
// its addresses, routes and keep_addr_on_down) from the journal entries,
// and takes them out.
func ensureUp(ep *testbed.Endpoint) error {
	_, err := ep.ApplyUndo(recoverUndo(ep.Dev))
	_, kerr := ep.ApplyUndo(recoverKeepUndo(ep.Dev))
	return errors.Join(err, kerr)
}
