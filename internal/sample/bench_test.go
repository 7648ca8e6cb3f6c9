package sample

import (
	"context"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkSamplerTick is one sampling step on the real /proc: read and
// parse /proc/stat, record a sample, read and parse one /proc/PID/stat.
func BenchmarkSamplerTick(b *testing.B) {
	s := NewSampler(&ProcFS{}, time.Second)
	s.ticker = func(time.Duration) (<-chan time.Time, func()) { return nil, func() {} }
	if err := s.TrackProcess("bench", SideSender, os.Getpid()); err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.mu.Lock()
		err := s.tick()
		s.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if _, err := s.Stop(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSamplerCost runs the real sampler, goroutine and ticker
// included, tracking two processes, and reports the CPU time (user +
// system, kernel work generating /proc/stat included) it costs per tick.
// At the normal 1 s interval, "core-%" is the share of one core the
// sampler takes; the benchmark ticks every millisecond only to gather
// enough ticks quickly. Everything else in the process sleeps meanwhile,
// so the process's CPU time is the sampler's.
func BenchmarkSamplerCost(b *testing.B) {
	const interval = time.Millisecond
	fs := &countingFS{FS: &ProcFS{}}
	s := NewSampler(fs, interval)
	if err := s.TrackProcess("bench", SideSender, os.Getpid()); err != nil {
		b.Fatal(err)
	}
	if err := s.TrackProcess("parent", SideReceiver, os.Getppid()); err != nil {
		b.Fatal(err)
	}
	before := cpuTime(b)
	if err := s.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Duration(b.N) * interval)
	if _, err := s.Stop(); err != nil {
		b.Fatal(err)
	}
	used := cpuTime(b) - before
	// Every read of /proc/stat is a tick, those of Start and Stop included.
	perTick := float64(used.Nanoseconds()) / float64(fs.statReads)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(perTick, "cpu-ns/tick")
	b.ReportMetric(100*perTick/float64(time.Second), "core-%@1Hz")
}

func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingFS counts reads of /proc/stat.
type countingFS struct {
	FS
	statReads int
}

func (c *countingFS) ReadFile(name string) ([]byte, error) {
	if name == "stat" {
		c.statReads++
	}
	return c.FS.ReadFile(name)
}
