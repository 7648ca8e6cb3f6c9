package udpgen

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

const usage = `usage: tunbench udpgen recv --addr A [--port P] [--timeout 60s]
       tunbench udpgen send --addr A [--port P] --size BYTES [--rate BPS] [--duration 3s]
`

// DefaultPort is the generator's UDP port.
const DefaultPort = 12867

// Main runs "tunbench udpgen": args[0] is "send" or "recv". Each prints
// its report as one line of JSON on stdout; the receiver prints
// "listening" on stderr once bound. It returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("udpgen "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "address to send to (send) or bind (recv)")
	port := fs.Int("port", DefaultPort, "UDP port")
	size := fs.Int("size", 0, "UDP payload bytes (send)")
	rate := fs.String("rate", "0", "offered payload rate in bits per second, 0 unlimited (send)")
	dur := fs.Duration("duration", 3*time.Second, "sending time (send)")
	timeout := fs.Duration("timeout", 60*time.Second, "longest run (recv)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	a, err := netip.ParseAddr(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "udpgen: --addr %q: %v\n", *addr, err)
		return 2
	}
	enc := json.NewEncoder(stdout)
	switch args[0] {
	case "send":
		r, err := strconv.ParseFloat(*rate, 64)
		if err != nil || r < 0 {
			fmt.Fprintf(stderr, "udpgen: --rate %q: want bits per second, 0 for unlimited\n", *rate)
			return 2
		}
		rep, err := Send(ctx, SendConfig{Addr: a, Port: *port, Size: *size, Rate: r, Duration: *dur})
		if err != nil {
			rep.Error = err.Error()
			fmt.Fprintln(stderr, err)
		}
		_ = enc.Encode(rep)
		if err != nil {
			return 1
		}
	case "recv":
		rep, err := Receive(ctx, RecvConfig{Bind: a, Port: *port, Timeout: *timeout,
			Ready: func() { fmt.Fprintln(stderr, "listening") }})
		if err != nil {
			rep.Error = err.Error()
			fmt.Fprintln(stderr, err)
		}
		_ = enc.Encode(rep)
		if err != nil {
			return 1
		}
	default:
		fmt.Fprintf(stderr, "udpgen: unknown subcommand %q\n%s", args[0], usage)
		return 2
	}
	return 0
}
