// Package proc is what the benchmarks do with processes outside their own:
// read a process's parent and CPU time from /proc/PID/stat (the Postgres
// server's CPU in package peers, a hub's in cmd/fleet), and build the cks
// binary whose processes they start (cmd/fleet's hub, cmd/cksbench's stop
// benchmark's agents).
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ClockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports here).
const ClockTick = 10 * time.Millisecond

// Stat is what the benchmarks read of /proc/PID/stat: the parent, and the
// CPU times in ClockTick units — the process's own (UTime, STime) and those
// of its children it has reaped (CUTime, CSTime).
type Stat struct {
	PPID                         int
	UTime, STime, CUTime, CSTime int64
}

// CPU is the process's own user and system CPU time.
func (s Stat) CPU() time.Duration { return time.Duration(s.UTime+s.STime) * ClockTick }

// errStat is a /proc/PID/stat this parser does not understand.
var errStat = errors.New("malformed /proc stat")

// ReadStat parses /proc/PID/stat: the fields after the command name (which
// is in parentheses and may itself hold spaces and parentheses).
func ReadStat(pid int) (Stat, error) {
	path := filepath.Join("/proc", strconv.Itoa(pid), "stat")
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("%s: %w", path, errStat)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	if len(f) < 15 {
		return Stat{}, fmt.Errorf("%s: %w", path, errStat)
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	return Stat{PPID: int(n(4)), UTime: n(14), STime: n(15), CUTime: n(16), CSTime: n(17)}, nil
}

// BuildCKS builds the cks command of the checkout this module replaces
// github.com/cks-dev/cks with (go.mod's replace: the tree the benchmark
// runs from) into dir and returns the binary's path. The go command runs in
// the working directory, which must be in this module (bench/ or below);
// its output goes to stderr.
func BuildCKS(ctx context.Context, dir string, stderr io.Writer) (string, error) {
	bin := filepath.Join(dir, "cks")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/cks-dev/cks/cmd/cks")
	build.Stderr = stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build cks (go build github.com/cks-dev/cks/cmd/cks, from the bench module): %w", err)
	}
	return bin, nil
}
