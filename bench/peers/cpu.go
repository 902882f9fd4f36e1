package peers

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cks-dev/cks/bench/internal/proc"
)

// processCPU is this process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU reads the CPU time of a PostgreSQL server from /proc: the
// postmaster's own, the time of its children that have exited (the kernel
// adds it to the postmaster's cutime/cstime when it reaps them), and that
// of its live children (backends, WAL writer, checkpointer, autovacuum).
type serverCPU struct{ postmaster int }

// findServer finds the postmaster of backend pid; nil when /proc does not
// show one (another machine, another PID namespace).
func findServer(backend int) *serverCPU {
	st, err := proc.ReadStat(backend)
	if err != nil {
		return nil
	}
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.PPID), "comm"))
	if err != nil || !strings.HasPrefix(string(comm), "postgres") {
		return nil
	}
	return &serverCPU{postmaster: st.PPID}
}

// total is the server's CPU time so far; false when the postmaster is gone.
func (s *serverCPU) total() (time.Duration, bool) {
	pm, err := proc.ReadStat(s.postmaster)
	if err != nil {
		return 0, false
	}
	ticks := pm.UTime + pm.STime + pm.CUTime + pm.CSTime
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := proc.ReadStat(pid); err == nil && st.PPID == s.postmaster {
			ticks += st.UTime + st.STime
		}
	}
	return time.Duration(ticks) * proc.ClockTick, true
}

// loadAverage is /proc/loadavg's 1-minute figure (0 when unreadable).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// cpuModel and memoryGiB describe the machine for the report.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memoryGiB() int {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return int((kb + 512*1024) / (1024 * 1024))
		}
	}
	return 0
}
