package sample

// Percent is how CPU time was spent over an interval, in percent of the
// ticks elapsed (Ticks). User includes nice (and guest) time; Busy is
// 100 - Idle - Iowait, so it counts Steal as busy, like mpstat's complement
// of %idle and %iowait. The fields other than Busy sum to 100.
//
// When no tick elapsed (Ticks = 0, e.g. two reads within one tick) every
// percentage is 0: nothing was observed, and no NaN is produced.
type Percent struct {
	Ticks   uint64
	User    float64
	System  float64
	Softirq float64
	Irq     float64
	Iowait  float64
	Steal   float64
	Idle    float64
	Busy    float64
}

// CorePercent is one core's Percent; ID is N of its "cpuN" line.
type CorePercent struct {
	ID int
	Percent
}

// Utilization is CPU use between two reads of /proc/stat.
type Utilization struct {
	// All is the whole machine: 100 means every core was busy.
	All Percent
	// CPUs has one entry per core present in both reads, in the order of
	// the later read.
	CPUs []CorePercent
}

// Usage returns CPU use between prev and cur, two reads of /proc/stat
// taken in that order. A counter that went backwards (iowait can, on idle
// cores; a core can go offline and come back) counts as not advancing.
func Usage(prev, cur Stat) Utilization {
	u := Utilization{All: between(prev.All, cur.All)}
	u.CPUs = make([]CorePercent, 0, len(cur.CPUs))
	for _, c := range cur.CPUs {
		p, ok := findCPU(prev.CPUs, c.ID)
		if !ok {
			continue
		}
		u.CPUs = append(u.CPUs, CorePercent{ID: c.ID, Percent: between(p, c.Times)})
	}
	return u
}

func findCPU(cpus []CPUTimes, id int) (Times, bool) {
	// Cores are usually in the same position in both reads.
	if id < len(cpus) && cpus[id].ID == id {
		return cpus[id].Times, true
	}
	for _, c := range cpus {
		if c.ID == id {
			return c.Times, true
		}
	}
	return Times{}, false
}

// between computes Percent from two snapshots of one set of counters.
func between(prev, cur Times) Percent {
	d := Times{
		User:    delta(prev.User, cur.User),
		Nice:    delta(prev.Nice, cur.Nice),
		System:  delta(prev.System, cur.System),
		Idle:    delta(prev.Idle, cur.Idle),
		Iowait:  delta(prev.Iowait, cur.Iowait),
		Irq:     delta(prev.Irq, cur.Irq),
		Softirq: delta(prev.Softirq, cur.Softirq),
		Steal:   delta(prev.Steal, cur.Steal),
	}
	total := d.Total()
	if total == 0 {
		return Percent{}
	}
	pct := func(x uint64) float64 { return 100 * float64(x) / float64(total) }
	p := Percent{
		Ticks:   total,
		User:    pct(d.User + d.Nice),
		System:  pct(d.System),
		Softirq: pct(d.Softirq),
		Irq:     pct(d.Irq),
		Iowait:  pct(d.Iowait),
		Steal:   pct(d.Steal),
		Idle:    pct(d.Idle),
	}
	p.Busy = pct(total - d.Idle - d.Iowait)
	return p
}

func delta(prev, cur uint64) uint64 {
	if cur > prev {
		return cur - prev
	}
	return 0
}
