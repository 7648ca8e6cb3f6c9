package labtest

import (
	"testing"
	"time"
)

// With TUNBENCH_LAB_RESERVE=1 (as make test sets it) and two slots, the
// tests that do not ask for the reserved slot share the other: a second
// one waits while the first holds it, and the reserved test (the
// registry's TestKernelLab) boots at once beside them. Without it, any
// test takes any slot.
func TestReservedSlot(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // lock files of this test's own
	t.Setenv("TUNBENCH_LAB_SLOTS", "2")
	took := func(reserved bool) <-chan func() {
		ch := make(chan func(), 1)
		name := "unreserved"
		if reserved {
			name = "reserved"
		}
		go func() {
			done := make(chan struct{})
			t.Run(name, func(t *testing.T) {
				lock(t, reserved)
				ch <- func() { close(done) }
				<-done // hold the slot until released
			})
		}()
		return ch
	}
	within := func(ch <-chan func(), d time.Duration) func() {
		select {
		case release := <-ch:
			return release
		case <-time.After(d):
			return nil
		}
	}

	t.Setenv(reserveEnv, "1")
	first := within(took(false), 5*time.Second)
	if first == nil {
		t.Fatal("the first unreserved test got no slot")
	}
	second := took(false)
	if within(second, 500*time.Millisecond) != nil {
		t.Fatal("a second unreserved test took the reserved slot")
	}
	reserved := within(took(true), 5*time.Second)
	if reserved == nil {
		t.Fatal("the reserved test waited while its slot was free")
	}
	first()
	release := within(second, 5*time.Second)
	if release == nil {
		t.Fatal("the second unreserved test did not get the slot the first released")
	}
	release()
	reserved()

	t.Setenv(reserveEnv, "")
	a := within(took(false), 5*time.Second)
	b := within(took(false), 5*time.Second)
	if a == nil || b == nil {
		t.Fatal("without the reserve, two unreserved tests did not get both slots")
	}
	a()
	b()
}
