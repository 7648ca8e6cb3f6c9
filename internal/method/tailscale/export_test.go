package tailscale

import "time"

// SetJoinTimeout sets how long a node may take to join the control
// server and returns a function restoring it.
func SetJoinTimeout(d time.Duration) func() {
	old := joinTimeout
	joinTimeout = d
	return func() { joinTimeout = old }
}
