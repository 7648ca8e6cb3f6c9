package sample

import (
	"bytes"
	"errors"
	"fmt"
)

// Times holds the cumulative tick counters of one "cpu" line of /proc/stat,
// in USER_HZ ticks since boot.
//
// The kernel already counts Guest in User and GuestNice in Nice, so Total
// leaves them out.
type Times struct {
	User, Nice, System, Idle, Iowait, Irq, Softirq, Steal, Guest, GuestNice uint64
}

// Total is the number of ticks elapsed in all states, guest time excluded
// (it is part of User and Nice already).
func (t Times) Total() uint64 {
	return t.User + t.Nice + t.System + t.Idle + t.Iowait + t.Irq + t.Softirq + t.Steal
}

// CPUTimes are the counters of one core ("cpuN" line; N is ID).
type CPUTimes struct {
	ID int
	Times
}

// Stat is the CPU part of one read of /proc/stat.
type Stat struct {
	// All is the aggregate "cpu" line: the sum over the online cores.
	All Times
	// CPUs holds one entry per "cpuN" line, in file order. Offline cores
	// have no line, so IDs may have gaps.
	CPUs []CPUTimes
}

// ParseProcStat parses the "cpu" and "cpuN" lines of /proc/stat and ignores
// the rest. Lines with fewer than the ten counters of Linux 2.6.33 and
// later must carry at least user, nice, system and idle; missing counters
// are zero.
func ParseProcStat(data []byte) (Stat, error) {
	var s Stat
	if err := parseProcStatInto(data, &s); err != nil {
		return Stat{}, err
	}
	return s, nil
}

// parseProcStatInto parses into s, reusing s.CPUs' storage.
func parseProcStatInto(data []byte, s *Stat) error {
	s.CPUs = s.CPUs[:0]
	seenAll := false
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !bytes.HasPrefix(line, []byte("cpu")) {
			if seenAll {
				break // the cpu lines come first and are contiguous
			}
			continue
		}
		label, rest := nextField(line)
		t, err := parseTimes(rest)
		if err != nil {
			return fmt.Errorf("parse /proc/stat line %q: %w", label, err)
		}
		if len(label) == 3 {
			s.All = t
			seenAll = true
			continue
		}
		id, ok := parseUint(label[3:])
		if !ok || id > 1<<20 {
			return fmt.Errorf("parse /proc/stat: bad cpu label %q", label)
		}
		s.CPUs = append(s.CPUs, CPUTimes{ID: int(id), Times: t})
	}
	if !seenAll {
		return errors.New("parse /proc/stat: no aggregate \"cpu\" line")
	}
	return nil
}

func parseTimes(b []byte) (Times, error) {
	var v [10]uint64
	n := 0
	for {
		var f []byte
		f, b = nextField(b)
		if len(f) == 0 {
			break
		}
		if n == len(v) {
			break // newer kernels may add columns
		}
		x, ok := parseUint(f)
		if !ok {
			return Times{}, fmt.Errorf("counter %d: not a number: %q", n+1, f)
		}
		v[n] = x
		n++
	}
	if n < 4 {
		return Times{}, fmt.Errorf("%d counters, want at least 4", n)
	}
	return Times{
		User: v[0], Nice: v[1], System: v[2], Idle: v[3], Iowait: v[4],
		Irq: v[5], Softirq: v[6], Steal: v[7], Guest: v[8], GuestNice: v[9],
	}, nil
}

// nextField returns the next field of b separated by spaces or tabs, and
// the rest of b after it. field is empty when b holds no more fields.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

// parseUint parses a decimal number without allocating.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var x uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if x > (^uint64(0)-d)/10 {
			return 0, false
		}
		x = x*10 + d
	}
	return x, true
}
