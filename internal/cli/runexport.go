package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/store"
)

// exportPath is where a run's JSON export goes: the --export flag's path,
// else exports/<run id>.json beside the database (docs/results.md).
func exportPath(flag, dbPath, id string, postgres bool) string {
	if flag != "" {
		return flag
	}
	if postgres {
		// A database on a server has no directory: beside the default file.
		return filepath.Join(filepath.Dir(store.DefaultPath()), "exports", id+".json")
	}
	return filepath.Join(filepath.Dir(dbPath), "exports", id+".json")
}

// writeExport writes a run's JSON export (docs/results.md) to path: as
// it was written where a testbed ran the run (the kernel lab's guest),
// else from the run's records.
func writeExport(path string, res *runner.Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write export: %w", err)
	}
	if res.Export != nil {
		if err := os.WriteFile(path, res.Export, 0o644); err != nil {
			return fmt.Errorf("write export: %w", err)
		}
		return nil
	}
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write export: %w", err)
	}
	if err := export.JSON(fh, res.Run, res.Cells); err != nil {
		fh.Close()
		return fmt.Errorf("write export %s: %w", path, err)
	}
	return fh.Close()
}
