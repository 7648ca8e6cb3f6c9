package method

import "testing"

// A method without options that change its framing is charged its
// Overhead; the families test their own Framer.
func TestHeaderOverhead(t *testing.T) {
	if got := HeaderOverhead(Native{}, IPv4, nil, ""); got != 0 {
		t.Errorf("native: %d, want 0", got)
	}
}
