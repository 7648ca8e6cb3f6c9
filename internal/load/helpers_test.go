package load

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readTestdata returns a file of testdata/, decompressed if it ends in .gz.
func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.HasSuffix(name, ".gz") {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		tb.Fatalf("gunzip %s: %v", name, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatalf("gunzip %s: %v", name, err)
	}
	return out
}

// near reports whether got is within tol (absolute) of want.
func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol
}

// nearRel reports whether got is within rel (fraction) of want.
func nearRel(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}
