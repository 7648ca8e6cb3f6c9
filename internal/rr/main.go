package rr

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const usage = `usage: tunbench rr server [--addr A] [--port P] [--once] [--cc NAME]
       tunbench rr client --addr A [--port P] [--duration 3s] [--warmup 200ms]
                          [--request 1] [--response 1] [--timeout 5s] [--samples]
                          [--cc NAME]
       tunbench rr echo [--addr A|--addr-from-stdin] [--port P]
       tunbench rr probe --addr A|--addr-from-stdin [--port P] [--interval 10ms] [--timeout 60s]
       tunbench rr stream --addr A [--port P] [--interval 10ms] [--lead 1s]
                          [--down 2s] [--flap DEV] [--wait 30s] [--tail 500ms]
`

// Exit codes of Main.
const (
	exitOK    = 0
	exitFail  = 1 // the server or the run failed
	exitUsage = 2 // bad arguments
)

// Main runs "tunbench rr": args are what follows "rr" on the command line,
// args[0] being "server" or "client". It returns the exit status.
//
// The client prints its Report as one line of JSON on stdout. When it fails
// (bad arguments included) it prints {"tool", "version", "error"} there
// instead, the error on stderr too, and returns non-zero. The server prints
// a line on stderr once it listens and serves until killed or, with --once,
// until its first client has closed the connection. SIGINT and SIGTERM end
// either cleanly, with status 1.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "server":
		return serverMain(ctx, args[1:], stderr)
	case "client":
		return clientMain(ctx, args[1:], stdout, stderr)
	case "echo", "probe", "stream":
		return udpMain(ctx, args[0], args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "rr: unknown subcommand %q\n%s", args[0], usage)
	return exitUsage
}

func serverMain(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("rr server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "address to listen on (default: every IPv4 and IPv6 address)")
	port := fs.Int("port", DefaultPort, "TCP port")
	once := fs.Bool("once", false, "serve one client, then exit")
	cc := fs.String("cc", "", "TCP congestion control of the accepted connections (default: the namespace's)")
	if err := fs.Parse(args); err != nil {
		return usageStatus(err)
	}
	ap, err := addrPort(fs, *addr, *port, false)
	if err != nil {
		fmt.Fprintf(stderr, "rr server: %v\n", err)
		return exitUsage
	}
	s, err := ListenCongestion(ap, *cc)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFail
	}
	s.ConnError = func(err error) { fmt.Fprintln(stderr, err) }
	fmt.Fprintf(stderr, "rr server: listening on %s\n", s.Addr())
	stopClose := context.AfterFunc(ctx, func() { s.Close() })
	defer stopClose()
	err = s.Serve(*once)
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "rr server: interrupted")
		return exitFail
	case err != nil:
		fmt.Fprintln(stderr, err)
		return exitFail
	}
	return exitOK
}

func clientMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fail := func(status int, err error) int {
		fmt.Fprintln(stderr, err)
		// Only these three keys: no zero figure to be mistaken for one.
		_ = json.NewEncoder(stdout).Encode(struct {
			Tool    string `json:"tool"`
			Version string `json:"version"`
			Error   string `json:"error"`
		}{Tool, Version, err.Error()})
		return status
	}
	fs := flag.NewFlagSet("rr client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	addr := fs.String("addr", "", "server address (required)")
	port := fs.Int("port", DefaultPort, "server TCP port")
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Second, "measured time, after the warm-up")
	warmup := fs.Duration("warmup", DefaultWarmup, "unrecorded transactions first (0: none)")
	fs.IntVar(&cfg.RequestSize, "request", 1, "request size, bytes")
	fs.IntVar(&cfg.ResponseSize, "response", 1, "response size, bytes")
	fs.DurationVar(&cfg.Timeout, "timeout", DefaultTimeout, "connect and response timeout")
	fs.BoolVar(&cfg.KeepSamples, "samples", false, "print every RTT (samples_ns)")
	fs.StringVar(&cfg.Congestion, "cc", "", "TCP congestion control of the connection (default: the namespace's)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return fail(exitUsage, fmt.Errorf("rr client: %w", err))
	}
	ap, err := addrPort(fs, *addr, *port, true)
	if err != nil {
		return fail(exitUsage, fmt.Errorf("rr client: %w", err))
	}
	cfg.Server = ap
	cfg.Warmup = *warmup
	if cfg.Warmup == 0 {
		cfg.Warmup = -1 // none; Config reads 0 as the default
	}
	if cfg.RequestSize < 1 || cfg.ResponseSize < 1 || cfg.Duration <= 0 || cfg.Timeout <= 0 || *warmup < 0 {
		return fail(exitUsage, fmt.Errorf("rr client: --duration, --request, --response and --timeout must be positive, --warmup not negative"))
	}
	r, err := Run(ctx, cfg)
	if err != nil {
		return fail(exitFail, err)
	}
	if err := writeJSON(stdout, r); err != nil {
		fmt.Fprintf(stderr, "rr client: write report: %v\n", err)
		return exitFail
	}
	return exitOK
}

// addrPort checks the --addr and --port flags; a missing address is an
// error only if required.
func addrPort(fs *flag.FlagSet, addr string, port int, required bool) (netip.AddrPort, error) {
	if fs.NArg() > 0 {
		return netip.AddrPort{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if port < 1 || port > 65535 {
		return netip.AddrPort{}, fmt.Errorf("--port %d outside 1..65535", port)
	}
	if addr == "" {
		if required {
			return netip.AddrPort{}, errors.New("--addr is required")
		}
		return netip.AddrPortFrom(netip.Addr{}, uint16(port)), nil
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("--addr: %w", err)
	}
	return netip.AddrPortFrom(a, uint16(port)), nil
}

func usageStatus(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

func writeJSON(w io.Writer, r Report) error {
	return json.NewEncoder(w).Encode(r)
}
