// Package sample measures CPU use and device counters the way mpstat and
// ip -s do, while a benchmark cell runs.
//
// The parsers (ParseProcStat, ParseProcPIDStat) and the arithmetic (Usage,
// Rate) are pure. The operating system is reached only through two small
// interfaces: FS for /proc, so tests can supply a fake /proc that advances
// deterministically, and LinkGetter for device statistics (a netlink
// handle, possibly bound to another namespace).
//
// A Sampler reads /proc/stat once per interval on its own goroutine and, at
// Stop, returns a result.CPU: whole-machine samples, per-core averages over
// the whole measurement, and the CPU time of the processes registered with
// TrackProcess. Background measures machine load before a cell, so a cell run
// on a busy machine can be flagged (BusyThreshold).
//
// All tick counts are in USER_HZ (ClockTicks per second). Percentages are of
// the time elapsed on the CPUs concerned: 100 means every one of them was
// busy for the whole interval.
package sample
