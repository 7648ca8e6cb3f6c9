package localns_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// visitorEnv names the namespace a re-executed test binary visits on its
// first thread (TestKillInNamespaceSparesVisitors).
const visitorEnv = "TUNBENCH_TEST_VISIT_NAMESPACE"

// init keeps the main goroutine on the process's first thread in the
// visitor, so that its namespace switch is the first thread's.
func init() {
	if os.Getenv(visitorEnv) != "" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	testbedtest.ServeAgentIfAsked()
	if name := os.Getenv(visitorEnv); name != "" {
		visit(name)
	}
	os.Exit(m.Run())
}

// visit moves the first thread alone into namespace name, as a Go program
// entering a namespace for a moment on a locked thread does, says
// "visiting" with its thread count, and waits to be killed or for a
// minute.
func visit(name string) {
	done := make(chan struct{})
	for range 4 { // more threads, outside the namespace
		go func() {
			runtime.LockOSThread()
			<-done
		}()
	}
	time.Sleep(100 * time.Millisecond)
	ns, err := netns.GetFromName(name)
	if err == nil {
		err = netns.Set(ns)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	fmt.Println("visiting", len(tasks))
	time.Sleep(time.Minute)
	close(done)
	os.Exit(0)
}
