package rr

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// probeReady is the line "rr probe --addr-from-stdin" prints on stdout
// once it waits for the address.
const probeReady = "rr probe: ready"

// ProbeReady is probeReady, for the runner.
const ProbeReady = probeReady

// EchoReady is the line "rr echo --addr-from-stdin" prints on stdout once
// it waits for the address to listen on.
const EchoReady = "rr echo: ready"

// EchoListening is the line "rr echo --addr-from-stdin" prints on stdout
// once its socket is bound to the address it read.
const EchoListening = "rr echo: listening"

// udpMain runs "tunbench rr echo|probe|stream" (udp.go). The client
// subcommands print their report as one line of JSON, also when they
// fail (then with its error).
func udpMain(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rr "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "server address (echo: address to listen on, default every one)")
	port := fs.Int("port", DefaultEchoPort, "UDP port")
	interval := fs.Duration("interval", DefaultProbeInterval, "time between requests")
	timeout := fs.Duration("timeout", time.Minute, "probe: give up after this long")
	lead := fs.Duration("lead", time.Second, "stream: requests before the flap")
	down := fs.Duration("down", 2*time.Second, "stream: time the device stays down (without --flap: more stream)")
	dev := fs.String("flap", "", "stream: the device to take down and up")
	wait := fs.Duration("wait", 30*time.Second, "stream: longest wait for the first answer after the device is up")
	tail := fs.Duration("tail", 500*time.Millisecond, "stream: requests after the first answer")
	stdinAddr := fs.Bool("addr-from-stdin", false, "probe, echo: wait for the address on standard input (one line), then probe it, or listen on it")
	if err := fs.Parse(args); err != nil {
		return usageStatus(err)
	}
	if (sub == "probe" || sub == "echo") && *stdinAddr {
		// Started ahead (before the tunnel is set up), the probe learns
		// where to send once it exists: only this line stands between the
		// set-up and the first request. The echo server likewise learns
		// the tunnel address it listens on, so that it never listens on
		// every address of the host.
		ready := probeReady
		if sub == "echo" {
			ready = EchoReady
		}
		fmt.Fprintln(stdout, ready)
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && line == "" {
			fmt.Fprintf(stderr, "rr %s: read the address from stdin: %v\n", sub, err)
			return exitFail
		}
		*addr = strings.TrimSpace(line)
	}
	ap, err := addrPort(fs, *addr, *port, sub != "echo")
	if err != nil {
		fmt.Fprintf(stderr, "rr %s: %v\n", sub, err)
		return exitUsage
	}
	if *interval <= 0 || *timeout <= 0 || *lead <= 0 || *down <= 0 || *wait <= 0 || *tail <= 0 {
		fmt.Fprintf(stderr, "rr %s: --interval, --timeout, --lead, --down, --wait and --tail must be positive\n", sub)
		return exitUsage
	}
	var report any
	switch sub {
	case "echo":
		s, err := ListenEcho(ap)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitFail
		}
		if *stdinAddr {
			// The runner waits for this line before it lets the probe send.
			fmt.Fprintln(stdout, EchoListening)
		}
		fmt.Fprintf(stderr, "rr echo: listening on %s\n", s.Addr())
		stop := context.AfterFunc(ctx, func() { s.Close() })
		defer stop()
		if err := s.Serve(); err != nil {
			fmt.Fprintln(stderr, err)
			return exitFail
		}
		if ctx.Err() != nil {
			return exitFail
		}
		return exitOK
	case "probe":
		r, perr := Probe(ctx, ProbeConfig{Server: ap, Interval: *interval, Timeout: *timeout})
		err = perr
		if err != nil {
			r.Error = err.Error()
		}
		report = r
	case "stream":
		cfg := StreamConfig{Server: ap, Interval: *interval, Lead: *lead, Down: *down, Wait: *wait, Tail: *tail}
		if *dev != "" {
			cfg.Flap = &LinkFlap{Dev: *dev}
		}
		r, serr := Stream(ctx, cfg)
		err = serr
		if err != nil {
			r.Error = err.Error()
		}
		report = r
	}
	if jerr := json.NewEncoder(stdout).Encode(report); jerr != nil {
		err = errors.Join(err, jerr)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFail
	}
	return exitOK
}
