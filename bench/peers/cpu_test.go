package peers

import (
	"os"
	"testing"
	"time"
)

func TestProcessCPUGrowsWithWork(t *testing.T) {
	before := processCPU()
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for processCPU()-before < 20*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("5 s of spinning added %v of CPU time", processCPU()-before)
		}
		for i := range 100_000 {
			x += i
		}
	}
	_ = x
}

func TestServerCPUOfAFakePostmaster(t *testing.T) {
	// This process stands in for a postmaster: findServer is given the pid
	// of a "backend" whose parent is this process only when that parent's
	// comm is postgres, which it is not.
	if findServer(os.Getpid()) != nil {
		t.Error("findServer accepted a parent that is not postgres")
	}
	s := &serverCPU{postmaster: os.Getpid()}
	d, ok := s.total()
	if !ok || d <= 0 {
		t.Errorf("total() = %v, %v; want this process's CPU time", d, ok)
	}
	if _, ok := (&serverCPU{postmaster: -1}).total(); ok {
		t.Error("total() of a missing postmaster succeeded")
	}
}
