package sample

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestProcFSReadsRealProc(t *testing.T) {
	p := &ProcFS{}
	data, err := p.ReadFile("stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseProcStat(data)
	if err != nil {
		t.Fatalf("parse real /proc/stat: %v", err)
	}
	if len(st.CPUs) == 0 || st.All.Total() == 0 {
		t.Errorf("real /proc/stat parsed as %+v: want cores and ticks", st)
	}
	data, err = p.ReadFile(strconv.Itoa(os.Getpid()) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ParseProcPIDStat(data)
	if err != nil {
		t.Fatalf("parse own /proc/PID/stat: %v", err)
	}
	if ps.PID != os.Getpid() || ps.StartTime == 0 {
		t.Errorf("own stat parsed as %+v", ps)
	}
	// A pid above pid_max never exists.
	if _, err := p.ReadFile("4194305/stat"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading a missing process: err = %v, want fs.ErrNotExist", err)
	}
}

func TestProcFSGrowsBuffer(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 20000)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	if err := os.WriteFile(dir+"/big", big, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := (&ProcFS{Root: dir}).ReadFile("big")
	if err != nil || string(got) != string(big) {
		t.Errorf("ReadFile of a 20000-byte file: %d bytes, %v", len(got), err)
	}
}

// The real sampler, on the real /proc, sees this test burn CPU.
func TestSamplerRealProc(t *testing.T) {
	s := NewSampler(&ProcFS{}, 20*time.Millisecond)
	if err := s.TrackProcess("test", SideSender, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(150 * time.Millisecond); time.Now().Before(end); {
	}
	cpu, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseProcStat(readProcStat(t))
	if err != nil {
		t.Fatal(err)
	}
	if cpu.Cores != len(st.CPUs) || len(cpu.PerCore) != cpu.Cores {
		t.Errorf("Cores = %d, PerCore has %d, want %d", cpu.Cores, len(cpu.PerCore), len(st.CPUs))
	}
	if len(cpu.Samples) < 2 || cpu.BusyMax <= 0 || cpu.BusyMax > 100 {
		t.Errorf("%d samples, busy max %v: want several, busy in (0, 100]", len(cpu.Samples), cpu.BusyMax)
	}
	p := cpu.Processes[0]
	if p.User+p.System <= 0 || p.Cores <= 0 || cpu.SenderCores != p.Cores {
		t.Errorf("process %+v, sender cores %v: a spinning test must show CPU time", p, cpu.SenderCores)
	}
}

func readProcStat(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	return data
}
