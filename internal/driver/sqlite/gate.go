package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// writeGates holds one gate per database file (by absolute path) for every
// Driver of this process: a Driver takes its file's gate before it waits
// for SQLite's write lock and gives it back after the commit or rollback.
// Handles of one process on one file then take turns in the order they
// came (a channel's waiters are served first in, first out) instead of
// racing each other's polls of SQLite's lock, which on a loaded machine
// starved one of 17 handles past WriteLockTimeout (issue 44). Handles in
// other processes still meet at SQLite's lock (beginImmediate's poll).
var writeGates struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// writeGate returns the gate of the file at path.
func writeGate(path string) chan struct{} {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	writeGates.mu.Lock()
	defer writeGates.mu.Unlock()
	if writeGates.m == nil {
		writeGates.m = map[string]chan struct{}{}
	}
	g, ok := writeGates.m[path]
	if !ok {
		g = make(chan struct{}, 1)
		writeGates.m[path] = g
	}
	return g
}

// errGateTimeout is the error of a write that waited WriteLockTimeout for
// the other handles of this process on the same file.
var errGateTimeout = fmt.Errorf("database is locked: waited %s for this process's other writers of the file", WriteLockTimeout)

// enter waits for the file's gate until ctx ends or WriteLockTimeout
// passes, and returns the function that leaves it.
func (d *Driver) enter(ctx context.Context) (leave func(), err error) {
	t := time.NewTimer(WriteLockTimeout)
	defer t.Stop()
	select {
	case d.gate <- struct{}{}:
		return func() { <-d.gate }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, errGateTimeout
	}
}
