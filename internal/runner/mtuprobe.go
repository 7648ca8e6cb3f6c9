package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tunbench/tunbench/internal/load"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/testbed"
)

// stallBitsPerSecond is the rate under which the MSS probe counts as
// stalled: a working path carries orders of magnitude more.
const stallBitsPerSecond = 1e6

// probeFunc reports whether an IP packet of size bytes crosses.
type probeFunc func(size int) (bool, error)

// largestCrossing finds the largest size in [lo, hi] for which probe
// succeeds, trying hi first (the usual answer) and then binary search. It
// returns lo-1 when nothing crosses, and the number of probes.
func largestCrossing(lo, hi int, probe probeFunc) (int, int, error) {
	n := 1
	ok, err := probe(hi)
	if err != nil || ok {
		return hi, n, err
	}
	best := lo - 1
	for lo < hi {
		mid := (lo + hi) / 2
		n++
		ok, err := probe(mid)
		if err != nil {
			return best, n, err
		}
		if ok {
			best, lo = mid, mid+1
		} else {
			hi = mid
		}
	}
	return best, n, nil
}

// measureMTUProbe runs the mtu_probe test: ping with don't-fragment from a
// to b over the tunnel, then iperf3 with an MSS one byte above what the
// found path MTU allows.
func measureMTUProbe(ctx context.Context, tb *testbed.Pair, path *method.Path, p result.Params, configured int) (*result.MTUProbe, error) {
	ip := 20
	minIP := 68
	if !path.B.Unmap().Is4() {
		ip, minIP = 40, 1280
	}
	res := &result.MTUProbe{ConfiguredMTU: configured, Tool: "ping -M do"}
	probe := func(size int) (bool, error) {
		payload := size - ip - 8 // ICMP echo header
		argv := []string{"ping", "-n", "-q", "-M", "do", "-c", "3", "-i", "0.05", "-W", "0.5", "-s", strconv.Itoa(payload), path.B.Unmap().String()}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := tb.A.Run(pctx, argv...)
		if ctx.Err() != nil {
			return false, context.Cause(ctx)
		}
		return err == nil, nil
	}
	pmtu, n, err := largestCrossing(minIP, configured, probe)
	res.PathMTU, res.Probes = pmtu, n
	res.Mismatch = pmtu < configured
	if err != nil {
		return res, fmt.Errorf("ping probes: %w", err)
	}
	if pmtu < minIP {
		return res, fmt.Errorf("no ping of %d bytes or more crossed the tunnel", minIP)
	}
	res.TCPMSS = pmtu - ip - 20 + 1
	dur := 2 * time.Second
	tctx, cancel := context.WithTimeout(ctx, dur+15*time.Second)
	defer cancel()
	srv, srvOut, err := startServer(tctx, tb.B, load.Iperf3Server{Bind: path.B, Port: iperf3Port}.Args(), iperf3Port)
	if err != nil {
		return res, fmt.Errorf("mss probe iperf3 server: %w", err)
	}
	defer stop(tb.B, srv)
	c := load.Iperf3Client{Server: path.B, Port: iperf3Port, Duration: dur, MSS: res.TCPMSS, Congestion: p.CongestionControl}
	cmd := tb.A.Command(tctx, c.Args()...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := tb.A.Start(cmd); err != nil {
		return res, fmt.Errorf("mss probe iperf3 client: %w", err)
	}
	waitErr := cmd.Wait()
	tb.A.Forget(cmd)
	thr, perr := load.ParseIperf3(out.Bytes())
	if thr != nil {
		res.TCPBitsPerSecond, res.TCPSeconds = thr.BitsPerSecond, thr.Seconds
	}
	if perr != nil || waitErr != nil {
		// A stalled transfer often ends in an iperf3 error or a timeout:
		// that is the finding, not a failure of the test.
		res.TCPError = fmt.Sprintf("%v (stderr: %s; server: %s)", errors.Join(perr, waitErr), trim(errOut.String()), trim(srvOut.String()))
	}
	res.Stalled = res.TCPBitsPerSecond < stallBitsPerSecond
	return res, nil
}
