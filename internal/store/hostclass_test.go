package store

import (
	"context"
	"testing"

	"github.com/tunbench/tunbench/internal/result"
)

// Records written before host classes (no host_class, hypervisor,
// os_release) still load: the new fields are empty, Emulated keeps its
// meaning, and readers see an emulated host as such.
func TestLoadRecordsWithoutHostClass(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	const oldHost = `{"hostname":"tunbench-guest","kernel":"6.1.0-28-amd64","arch":"x86_64",` +
		`"cpu_model":"QEMU Virtual CPU version 2.5+","cpu_count":2,"memory_mib":2048,` +
		`"tunbench_version":"v0.1.0","go_version":"go1.26.8","emulated":true}`
	if _, err := s.db.ExecContext(ctx, `
INSERT INTO runs (id, schema, started, finished, status, error, testbed, scenario, host)
VALUES ('20250316T080000-e001', 'tunbench.result/v1', '2025-03-16T08:00:00Z', NULL, 'done', '', 'vm', '', ?)`, oldHost); err != nil {
		t.Fatal(err)
	}
	const oldCell = `{"schema":"tunbench.result/v1","run_id":"20250316T080000-e001","key":"native","method":"native",` +
		`"repetition":1,"status":"ok","params":{"family":"ipv4"},"meta":{"emulated":false,"kernel":"6.1",` +
		`"hosts":[{"site":"fra","side":"a","hostname":"h1","kernel":"6.1","arch":"amd64","cpu_model":"x",` +
		`"cpu_count":2,"memory_mib":4096,"tunbench_version":"devel","go_version":"go1.26","emulated":false}]}}`
	if _, err := s.db.ExecContext(ctx, `
INSERT INTO cells (run_id, key, method, repetition, status, record)
VALUES ('20250316T080000-e001', 'native', 'native', 1, 'ok', ?)`, oldCell); err != nil {
		t.Fatal(err)
	}
	run, cells, err := s.Run(ctx, "20250316T080000-e001")
	if err != nil {
		t.Fatal(err)
	}
	h := run.Host
	if h.Class != "" || h.Hypervisor != "" || h.OSRelease != "" || !h.Emulated || !h.IsEmulated() || h.ClassLabel() != result.ClassEmulated {
		t.Errorf("old run host: %+v (label %q)", h, h.ClassLabel())
	}
	if len(cells) != 1 || len(cells[0].Meta.Hosts) != 1 {
		t.Fatalf("cells %+v", cells)
	}
	if mh := cells[0].Meta.Hosts[0]; mh.Class != "" || mh.IsEmulated() || mh.ClassLabel() != "" {
		t.Errorf("old cell host: %+v (label %q)", mh, mh.ClassLabel())
	}
}
