package registry_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/bed/kind"
	"github.com/tunbench/tunbench/internal/bed/registry"
)

const module = "github.com/tunbench/tunbench/"

// funcPackage is the import path of the package that defines function
// f: "github.com/tunbench/tunbench/internal/bed/ssh" for ssh.Open or a
// function literal in that package.
func funcPackage(f reflect.Value) string {
	name := runtime.FuncForPC(f.Pointer()).Name()
	dir, last := "", name
	if i := strings.LastIndex(name, "/"); i >= 0 {
		dir, last = name[:i+1], name[i+1:]
	}
	pkg, _, _ := strings.Cut(last, ".")
	return dir + pkg
}

// funcs are the non-nil function fields of a struct value, by name.
func funcs(v reflect.Value) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Func && !f.IsNil() {
			out[v.Type().Field(i).Name] = f
		}
	}
	return out
}

// A testbed is one folder: every operation of each registry entry (its
// preflight, open, clean, ... and its scenario checks) is defined in
// internal/bed/<entry name>, and the kinds the report reads are the
// entries' own, in the registry's order. Outside internal/bed no
// non-test file compares or switches on a testbed's name: the scenario,
// the runner and the command line ask the entries instead.
func TestEveryTestbedIsOneFolder(t *testing.T) {
	var names []string
	for _, e := range registry.Entries() {
		names = append(names, e.Name)
		want := module + "internal/bed/" + e.Name
		all := funcs(reflect.ValueOf(e))
		for n, f := range funcs(reflect.ValueOf(e.Scenario)) {
			all["Scenario."+n] = f
		}
		if len(all) == 0 {
			t.Errorf("%s: an entry without operations", e.Name)
		}
		for n, f := range all {
			if got := funcPackage(f); got != want {
				t.Errorf("testbed %s: %s is defined in %s, not in its folder %s", e.Name, n, got, want)
			}
		}
	}
	var kinds []string
	for _, k := range kind.All() {
		kinds = append(kinds, k.Name)
	}
	if !slices.Equal(kinds, names) {
		t.Errorf("kind.All() = %v, want the registry's %v", kinds, names)
	}

	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	// Where a testbed's name is compared for another reason.
	allowed := map[string]string{
		// A daemon's role in the ssh method's own process list ("ssh",
		// the client), not the testbed.
		"internal/method/sshtunnel/sshtunnel.go": "ssh",
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == filepath.Join("internal", "bed") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		name := func(e ast.Expr) string {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return ""
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil || !slices.Contains(names, v) || allowed[filepath.ToSlash(rel)] == v {
				return ""
			}
			return v
		}
		report := func(e ast.Expr, how string) {
			if n := name(e); n != "" {
				t.Errorf("%s: %s testbed %q: ask its registry entry (internal/bed) instead", fset.Position(e.Pos()), how, n)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					report(n.X, "compares with")
					report(n.Y, "compares with")
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					report(e, "switches on")
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
