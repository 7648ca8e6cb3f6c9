package nebula

import "time"

// SetHandshakeTimeout sets the wait for the first ping through the
// tunnel and returns a function restoring it.
func SetHandshakeTimeout(d time.Duration) func() {
	old := handshakeTimeout
	handshakeTimeout = d
	return func() { handshakeTimeout = old }
}
