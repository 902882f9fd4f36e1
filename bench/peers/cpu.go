package peers

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU is this process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports here).
const clockTick = 10 * time.Millisecond

// serverCPU reads the CPU time of a PostgreSQL server from /proc: the
// postmaster's own, the time of its children that have exited (the kernel
// adds it to the postmaster's cutime/cstime when it reaps them), and that
// of its live children (backends, WAL writer, checkpointer, autovacuum).
type serverCPU struct{ postmaster int }

// findServer finds the postmaster of backend pid; nil when /proc does not
// show one (another machine, another PID namespace).
func findServer(backend int) *serverCPU {
	st, ok := readStat(backend)
	if !ok {
		return nil
	}
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.ppid), "comm"))
	if err != nil || !strings.HasPrefix(string(comm), "postgres") {
		return nil
	}
	return &serverCPU{postmaster: st.ppid}
}

// total is the server's CPU time so far; false when the postmaster is gone.
func (s *serverCPU) total() (time.Duration, bool) {
	pm, ok := readStat(s.postmaster)
	if !ok {
		return 0, false
	}
	ticks := pm.utime + pm.stime + pm.cutime + pm.cstime
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.ppid == s.postmaster {
			ticks += st.utime + st.stime
		}
	}
	return time.Duration(ticks) * clockTick, true
}

type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

// readStat parses /proc/PID/stat: the fields after the command name (which
// is in parentheses and may itself hold spaces and parentheses).
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	if len(f) < 15 {
		return procStat{}, false
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	return procStat{ppid: int(n(4)), utime: n(14), stime: n(15), cutime: n(16), cstime: n(17)}, true
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
