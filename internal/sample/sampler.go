package sample

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sync"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// Values of result.CPU.Split.
const (
	// SplitApproximate is the default. Sender and receiver cores are the
	// CPU time of the processes tracked for each side, but when both
	// namespaces share the machine's CPUs the kernel's network work
	// (softirq: the veth, tunnel and TCP receive path) runs on whichever
	// core takes the interrupt or the packet, and cannot be attributed to
	// one side. It is reported once, machine-wide, as SoftirqCores.
	SplitApproximate = "approximate"
	// SplitProcess is for callers whose two sides have CPUs of their own
	// (e.g. separate hosts), where per-process time is the whole story.
	SplitProcess = "process"
	// SplitHosts is for a sender and a receiver on hosts of their own:
	// each host's whole busy time is its side's cost (result.CPU.Hosts).
	SplitHosts = "hosts"
)

// Sides of a tracked process, as in result.ProcessCPU.Side.
const (
	SideSender   = "sender"
	SideReceiver = "receiver"
)

// Sampler samples CPU use while a measurement runs, like
// "mpstat -P ALL <interval>" plus per-process accounting. Use it once:
// NewSampler, optionally TrackProcess, Start, TrackProcess as processes
// appear, Stop. TrackProcess and Stop may be called from any goroutine.
type Sampler struct {
	fs       FS
	interval time.Duration
	now      func() time.Time // replaced in tests
	// ticker returns the channel that paces sampling; tests replace it.
	ticker func(time.Duration) (c <-chan time.Time, stop func())

	mu      sync.Mutex // guards everything below and all use of fs
	state   int
	start   time.Time
	lastAt  time.Time
	first   Stat
	prev    Stat
	cur     Stat
	samples []result.CPUSample
	procs   []*process
	err     error // first error of the sampling goroutine
	cancel  context.CancelFunc
	done    chan struct{}
}

const (
	stateNew = iota
	stateRunning
	stateStopped
)

// NewSampler returns a sampler that reads fs (normally &ProcFS{}) every
// interval. The FS must not be used by anything else while sampling.
func NewSampler(fs FS, interval time.Duration) *Sampler {
	return &Sampler{fs: fs, interval: interval, now: time.Now, ticker: realTicker}
}

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// Start takes the first snapshot of /proc/stat and of each tracked process,
// then samples every interval on its own goroutine until Stop or until ctx
// is done (Stop is still needed to collect the result). It fails if
// /proc/stat cannot be read or a tracked process is already gone.
func (s *Sampler) Start(ctx context.Context) error {
	if s.interval <= 0 {
		return fmt.Errorf("start cpu sampler: interval %v is not positive", s.interval)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return errors.New("start cpu sampler: already started")
	}
	now := s.now()
	if err := s.readStat(&s.first); err != nil {
		return fmt.Errorf("start cpu sampler: %w", err)
	}
	for _, p := range s.procs {
		// One that exited since it was tracked is accounted as one gone
		// when tracked (TrackProcess).
		if p.unread {
			p.baseAt = now
			continue
		}
		if err := s.baseline(p, now); errors.Is(err, fs.ErrNotExist) {
			p.Exited, p.unread, p.baseAt = true, true, now
		} else if err != nil {
			return fmt.Errorf("start cpu sampler: %w", err)
		}
	}
	s.prev = cloneStat(s.first)
	s.start, s.lastAt = now, now
	s.state = stateRunning
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.loop(ctx)
	return nil
}

func (s *Sampler) loop(ctx context.Context) {
	defer close(s.done)
	c, stop := s.ticker(s.interval)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c:
			s.mu.Lock()
			err := s.tick()
			if err != nil {
				s.err = err
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// tick reads /proc/stat and the tracked processes and records one
// whole-machine sample. Called with mu held.
func (s *Sampler) tick() error {
	now := s.now()
	if err := s.readStat(&s.cur); err != nil {
		return fmt.Errorf("cpu sampler at %v: %w", now.Sub(s.start), err)
	}
	s.addSample(now, between(s.prev.All, s.cur.All))
	s.prev, s.cur = s.cur, s.prev
	s.lastAt = now
	return s.readProcesses()
}

func (s *Sampler) addSample(now time.Time, p Percent) {
	s.samples = append(s.samples, result.CPUSample{
		T:       now.Sub(s.start).Seconds(),
		User:    p.User,
		System:  p.System,
		Softirq: p.Softirq,
		Busy:    p.Busy,
	})
}

func (s *Sampler) readStat(into *Stat) error {
	data, err := s.fs.ReadFile("stat")
	if err != nil {
		return fmt.Errorf("read /proc/stat: %w", err)
	}
	return parseProcStatInto(data, into)
}

// Stop ends sampling, takes a last snapshot and returns what was measured.
//
// Samples holds one whole-machine sample per full interval, T being the
// end of the interval, relative to Start. The time since the last full
// interval becomes one more sample if it is at least half an interval long
// (or if there is no other sample); shorter tails are left out of Samples
// because at USER_HZ they are too coarse, but they are in PerCore, the
// process figures and SoftirqCores, which cover Start to Stop.
// BusyMin, BusyAvg and BusyMax are over Samples. Split is
// SplitApproximate; the caller may set SplitProcess.
func (s *Sampler) Stop() (*result.CPU, error) {
	s.mu.Lock()
	if s.state != stateRunning {
		s.mu.Unlock()
		return nil, errors.New("stop cpu sampler: not running")
	}
	s.state = stateStopped
	s.mu.Unlock()
	s.cancel()
	<-s.done

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	now := s.now()
	if err := s.readStat(&s.cur); err != nil {
		return nil, fmt.Errorf("stop cpu sampler: %w", err)
	}
	if err := s.readProcesses(); err != nil {
		return nil, fmt.Errorf("stop cpu sampler: %w", err)
	}
	if err := s.unreadError(); err != nil {
		return nil, fmt.Errorf("stop cpu sampler: %w", err)
	}
	tail := between(s.prev.All, s.cur.All)
	if tail.Ticks > 0 && (len(s.samples) == 0 || now.Sub(s.lastAt) >= s.interval/2) {
		s.addSample(now, tail)
	}
	return s.result(now), nil
}

func (s *Sampler) result(now time.Time) *result.CPU {
	whole := Usage(s.first, s.cur)
	cpu := &result.CPU{
		Interval:  s.interval.Seconds(),
		Cores:     len(s.cur.CPUs),
		Samples:   s.samples,
		PerCore:   make([]result.CoreUsage, 0, len(whole.CPUs)),
		Processes: make([]result.ProcessCPU, 0, len(s.procs)),
		Split:     SplitApproximate,
	}
	if cpu.Samples == nil {
		cpu.Samples = []result.CPUSample{}
	}
	if len(s.samples) > 0 {
		cpu.BusyMin, cpu.BusyMax = math.Inf(1), math.Inf(-1)
		var sum float64
		for _, x := range s.samples {
			cpu.BusyMin = min(cpu.BusyMin, x.Busy)
			cpu.BusyMax = max(cpu.BusyMax, x.Busy)
			sum += x.Busy
		}
		cpu.BusyAvg = sum / float64(len(s.samples))
	}
	for _, c := range whole.CPUs {
		cpu.PerCore = append(cpu.PerCore, result.CoreUsage{
			CPU: c.ID, User: c.User, System: c.System, Softirq: c.Softirq, Irq: c.Irq, Idle: c.Idle,
		})
	}
	cpu.SoftirqCores = whole.All.Softirq / 100 * float64(cpu.Cores)
	for _, p := range s.procs {
		pc := p.result(now)
		cpu.Processes = append(cpu.Processes, pc)
		switch pc.Side {
		case SideSender:
			cpu.SenderCores += pc.Cores
		case SideReceiver:
			cpu.ReceiverCores += pc.Cores
		}
	}
	return cpu
}

func cloneStat(s Stat) Stat {
	s.CPUs = append([]CPUTimes(nil), s.CPUs...)
	return s
}
