package testenv

import (
	"os"
	"path/filepath"
)

// Corpus is what FuzzSeeds needs of a fuzz target: a *testing.F.
type Corpus interface {
	Helper()
	Fatalf(format string, args ...any)
	Add(args ...any)
}

// FuzzSeeds adds every file of the package's testdata matching pattern
// (a filepath.Glob pattern, such as "iperf3_*.json") to f's seed corpus,
// each as one []byte argument: the captured real outputs a parser is
// tested on are where its fuzzing starts. A pattern matching no file
// fails the target, so a renamed capture cannot leave it without seeds.
func FuzzSeeds(f Corpus, pattern string) {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds match testdata/%s", pattern)
		return
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatalf("seed: %v", err)
			return
		}
		f.Add(data)
	}
}
