package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tunbench/tunbench/"

// goPackage is what "go list -json" says of a package: its direct
// imports and every package it depends on, directly or indirectly (test
// files left out).
type goPackage struct {
	ImportPath string
	Doc        string
	Imports    []string
	Deps       []string
}

// listPackages lists every package of the module with "go list -json".
func listPackages(t *testing.T) map[string]goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list -json ./...: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -json ./...: %v", err)
	}
	pkgs := map[string]goPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	return pkgs
}

// under reports whether import path p is pkg or a package below it.
func under(p, pkg string) bool {
	p = strings.TrimPrefix(p, module)
	return p == pkg || strings.HasPrefix(p, pkg+"/")
}

// TestImportRules checks the layers of the code (docs/development.md),
// counting every package a package depends on, directly or indirectly
// (non-test code):
//
//   - internal/runner, which applies a plan, stands under the report and
//     the testbeds: it depends on nothing of internal/report (the
//     summary's statistics, the export) nor of internal/bed (the testbed
//     registry, which would pull in the ssh and kubernetes testbeds and
//     client-go), nor on client-go itself. The command line writes the
//     export and gives the runner the testbeds it opens.
//   - nothing below the command line depends on the HTML report's
//     renderer (internal/report/render): only internal/cli, and this
//     main through it, do.
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	runner, ok := pkgs["internal/runner"]
	if !ok {
		t.Fatalf("go list names no internal/runner among %d packages", len(pkgs))
	}
	if !slices.ContainsFunc(runner.Deps, func(p string) bool { return under(p, "internal/store") }) {
		t.Fatalf("internal/runner's dependencies lack internal/store: go list's answer is not what this test reads\n%v", runner.Deps)
	}
	for _, d := range runner.Deps {
		for _, banned := range []string{"internal/report", "internal/bed"} {
			if under(d, banned) {
				t.Errorf("internal/runner depends on %s (%s): the command line writes the export and opens the testbeds; runner must stand under them", d, importChain(pkgs, "internal/runner", d))
			}
		}
		if strings.HasPrefix(d, "k8s.io/") {
			t.Errorf("internal/runner depends on %s (%s): only the kubernetes testbed needs client-go", d, importChain(pkgs, "internal/runner", d))
		}
	}

	const render = "internal/report/render"
	cli, ok := pkgs["internal/cli"]
	if !ok || !slices.Contains(cli.Deps, module+render) {
		t.Fatalf("internal/cli does not depend on %s: go list's answer is not what this test reads", render)
	}
	for name, p := range pkgs {
		// serve is the web front end: like the command line it presents
		// the report, and only the command line starts it.
		if name == "internal/cli" || name == "cmd/tunbench" || name == "internal/report/serve" || under(name, render) {
			continue
		}
		if slices.Contains(p.Deps, module+render) {
			t.Errorf("%s depends on %s (%s): only the command line renders the HTML report", name, render, importChain(pkgs, name, module+render))
		}
	}
	const serve = "internal/report/serve"
	for name, p := range pkgs {
		if name == "internal/cli" || name == "cmd/tunbench" || under(name, serve) {
			continue
		}
		if slices.Contains(p.Deps, module+serve) {
			t.Errorf("%s depends on %s (%s): only the command line starts the web view", name, serve, importChain(pkgs, name, module+serve))
		}
	}
}

// importChain is one chain of direct imports from package from to
// import path to, "a -> b -> c", for the error message.
func importChain(pkgs map[string]goPackage, from, to string) string {
	prev := map[string]string{module + from: ""}
	queue := []string{module + from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			chain := []string{strings.TrimPrefix(cur, module)}
			for p := prev[cur]; p != ""; p = prev[p] {
				chain = append([]string{strings.TrimPrefix(p, module)}, chain...)
			}
			return strings.Join(chain, " -> ")
		}
		for _, imp := range pkgs[strings.TrimPrefix(cur, module)].Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return "through packages outside the module"
}

// TestCodeMap: docs/development.md's map of the code names every package
// of the module, and only those, each with its line; and every package
// has a doc comment, as the map's lines sum them up.
func TestCodeMap(t *testing.T) {
	pkgs := listPackages(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## The map of the code\n")
	if !ok {
		t.Fatal(`docs/development.md has no "## The map of the code" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	mapped := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		cols := strings.Split(line, "|")
		if len(cols) != 4 || strings.TrimSpace(cols[1]) == "package" || strings.HasPrefix(strings.TrimSpace(cols[1]), "---") {
			continue
		}
		name, what := strings.TrimSpace(cols[1]), strings.TrimSpace(cols[2])
		if _, ok := pkgs[name]; !ok {
			t.Errorf("docs/development.md maps %s, which is no package of the module: remove its row or fix its path", name)
		}
		if what == "" {
			t.Errorf("docs/development.md maps %s without saying what it is for", name)
		}
		mapped[name] = true
	}
	for name, p := range pkgs {
		if !mapped[name] {
			t.Errorf("package %s is missing from docs/development.md's map of the code: add a row saying what it is for", name)
		}
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("package %s has no doc comment: say what it is for above its package clause (a doc.go)", name)
		}
	}
}
