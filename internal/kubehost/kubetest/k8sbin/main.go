// Command k8sbin builds the Kubernetes binaries the test cluster of
// internal/kubehost/kubetest runs (when they are not cached yet) and
// prints the directory holding them. scripts/k8s-binaries.sh runs it so
// that CI builds them once, before the tests.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tunbench/tunbench/internal/kubehost/kubetest"
)

func main() {
	dir, err := kubetest.Binaries(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(dir)
}
