package render

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/tunbench/tunbench"

// reportImports are the report packages each report package may import:
// export, summary and compare never draw, so the runner can write exports
// and a comparison can be made without the renderer.
var reportImports = map[string][]string{
	"internal/report/summary": {},
	"internal/report/export":  {"internal/report/summary"},
	"internal/report/compare": {"internal/report/summary"},
	"internal/report/render":  {"internal/report/summary", "internal/report/export", "internal/report/compare"},
	"internal/report/trend":   {"internal/report/summary"},
	"internal/report/serve":   {"internal/report/render", "internal/report/trend"},
}

// renderImporters are the packages besides render itself that may import
// the renderer: the CLI, and the web view, which serves its reports.
var renderImporters = []string{"internal/cli", "internal/report/render", "internal/report/serve"}

// TestOnlyCLIImportsRender parses the imports of every Go file under
// internal/ and fails if a package other than internal/cli and
// internal/report/serve (and render itself) imports the renderer, or if a report package imports one above
// it. It reads the files, not the build graph, so it runs offline in
// milliseconds.
func TestOnlyCLIImportsRender(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			dep, ok := strings.CutPrefix(p, modulePath+"/")
			if !ok || !strings.HasPrefix(dep, "internal/report/") {
				continue
			}
			if dep == "internal/report/render" && !slices.Contains(renderImporters, pkg) {
				t.Errorf("%s imports the renderer (%s); only %v may", pkg, filepath.Base(path), renderImporters)
			}
			if allowed, ok := reportImports[pkg]; ok && dep != pkg && !strings.HasPrefix(dep, "internal/report/internal/") && !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s (%s); it may import only %v of the report packages", pkg, dep, filepath.Base(path), allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("parsed %d Go files under %s/internal, want the whole tree", files, root)
	}
}
