// Package load holds one driver per load tool (iperf3, sockperf, netperf):
// an argv builder and a pure parser of the tool's machine-readable output.
//
// Nothing here starts processes or touches the operating system. Builders
// return the full argv (argv[0] is the tool's name, to be resolved by the
// caller) for the runner to execute inside a namespace with LC_ALL=C;
// parsers take the bytes the tool wrote and return the shared records of
// package result. A parser never returns a nil record with a nil error:
// tool failures come back as a *ToolError quoting the tool's own message,
// and unreadable output (empty, truncated, unexpected) as a plain error.
//
// The builders target the versions Debian ships (iperf3 3.12, sockperf 3.7);
// the parsers are tested on real output of those versions captured by
// testdata/capture.sh.
package load

import (
	"errors"
	"fmt"
)

// ErrNotSupported marks a request the tool cannot satisfy (for example an
// IPv6 address for sockperf 3.7). Test with errors.Is.
var ErrNotSupported = errors.New("not supported")

// ToolError is a failure reported by the load tool itself, such as iperf3's
// "unable to connect to server: Connection refused". Message is the tool's
// own text, trimmed of decoration.
type ToolError struct {
	Tool    string
	Message string
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("%s failed: %q", e.Tool, e.Message)
}
