package runner

import (
	"context"
	"time"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/sample"
	"github.com/tunbench/tunbench/internal/testbed"
)

// cpuSampler samples the CPUs of the machines a pair runs on: one sampler
// when both endpoints share this machine (the local testbed), one per host
// when they are on hosts of their own, where each host's CPU is exactly
// its side's cost.
type cpuSampler struct {
	tb      *testbed.Pair
	a, b    *sample.Sampler // b is nil when both ends share a machine
	aSender bool
}

func newCPUSampler(tb *testbed.Pair, direction string) *cpuSampler {
	s := &cpuSampler{tb: tb, a: sample.NewSampler(procFS(tb.A), time.Second)}
	if !sameMachine(tb) {
		s.b = sample.NewSampler(procFS(tb.B), time.Second)
	}
	aSide, _ := sides(direction)
	s.aSender = aSide == sample.SideSender
	return s
}

// sameMachine reports whether both endpoints are on one machine.
func sameMachine(tb *testbed.Pair) bool {
	return tb.A.Local() == tb.B.Local() && tb.A.Host == tb.B.Host
}

// procFS reads /proc on ep's host.
func procFS(ep *testbed.Endpoint) sample.FS {
	if ep.Local() {
		return &sample.ProcFS{}
	}
	return remoteProc{ep}
}

type remoteProc struct{ ep *testbed.Endpoint }

func (r remoteProc) ReadFile(name string) ([]byte, error) { return r.ep.ReadFile("/proc/" + name) }

// sampler returns the sampler of ep's machine.
func (s *cpuSampler) sampler(ep *testbed.Endpoint) *sample.Sampler {
	if s.b != nil && ep == s.tb.B {
		return s.b
	}
	return s.a
}

// TrackProcess accounts process pid on ep's host to role and side.
func (s *cpuSampler) TrackProcess(ep *testbed.Endpoint, role, side string, pid int) error {
	return s.sampler(ep).TrackProcess(role, side, pid)
}

// Exited gives the sampler of ep's host the CPU time cmd's exit status
// reports, once cmd has been waited for: what accounts a process that
// exited before its first read (sample.Sampler.ExitedCPU), a short
// client on a loaded host.
func (s *cpuSampler) Exited(ep *testbed.Endpoint, cmd *testbed.Cmd) {
	if user, sys, ok := cmd.CPUTime(); ok {
		s.sampler(ep).ExitedCPU(cmd.Pid(), user, sys)
	}
}

// Start starts every sampler.
func (s *cpuSampler) Start(ctx context.Context) error {
	if err := s.a.Start(ctx); err != nil {
		return err
	}
	if s.b != nil {
		if err := s.b.Start(ctx); err != nil {
			_, _ = s.a.Stop()
			return err
		}
	}
	return nil
}

// Stop stops the samplers and returns the CPU record. With two hosts it
// is the sender host's record, with the split "hosts": sender and
// receiver cores are each host's whole busy time, and Hosts gives both.
func (s *cpuSampler) Stop() (*result.CPU, error) {
	ca, err := s.a.Stop()
	if s.b == nil || err != nil {
		if s.b != nil {
			_, _ = s.b.Stop()
		}
		return ca, err
	}
	cb, err := s.b.Stop()
	if err != nil {
		return nil, err
	}
	return mergeHosts(ca, cb, s.tb.A.Host, s.tb.B.Host, s.aSender), nil
}

// mergeHosts combines the records of side a's and side b's hosts.
func mergeHosts(ca, cb *result.CPU, hostA, hostB string, aSender bool) *result.CPU {
	send, recv := ca, cb
	sendHost, recvHost := hostA, hostB
	if !aSender {
		send, recv, sendHost, recvHost = cb, ca, hostB, hostA
	}
	out := *send
	out.Split = sample.SplitHosts
	out.SenderCores = busyCores(send)
	out.ReceiverCores = busyCores(recv)
	out.SoftirqCores = send.SoftirqCores + recv.SoftirqCores
	out.Processes = append(append([]result.ProcessCPU(nil), send.Processes...), recv.Processes...)
	out.Hosts = []result.HostCPU{hostCPU(sendHost, sample.SideSender, send), hostCPU(recvHost, sample.SideReceiver, recv)}
	return &out
}

func busyCores(c *result.CPU) float64 { return c.BusyAvg / 100 * float64(c.Cores) }

func hostCPU(host, side string, c *result.CPU) result.HostCPU {
	busyMin := c.BusyMin
	return result.HostCPU{Host: host, Side: side, Cores: c.Cores, BusyMin: &busyMin, BusyAvg: c.BusyAvg, BusyMax: c.BusyMax,
		SoftirqCores: c.SoftirqCores, PerCore: c.PerCore}
}

// background measures how busy the pair's machines are before a cell: the
// busiest of them.
func background(ctx context.Context, tb *testbed.Pair, window time.Duration) (float64, error) {
	busy, err := sample.Background(ctx, procFS(tb.A), window)
	if err != nil || sameMachine(tb) {
		return busy, err
	}
	busyB, err := sample.Background(ctx, procFS(tb.B), window)
	return max(busy, busyB), err
}
