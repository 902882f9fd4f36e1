package driver

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cks-dev/cks"
)

// StorageFault wraps err, a driver's error, as the storage fault kind
// (ErrStorageReadOnly or ErrStorageFull), keeping both in its chain.
func StorageFault(kind, err error) error { return fmt.Errorf("%w: %w", kind, err) }

// FaultMemory is how long a handle's StorageHealth reports the storage
// fault of a failed write. No probe tells a full disk without writing, so
// the last failed write stands for the state of the storage that long.
const FaultMemory = time.Minute

// Faults remembers the latest storage fault a store handle's writes met, for
// its StorageHealth. The zero value is ready; it is safe for concurrent use.
type Faults struct {
	mu  sync.Mutex
	err error
	at  time.Time
}

// Note records err, at now, when it is a storage fault (it matches
// ErrUnavailable), and returns err unchanged.
func (f *Faults) Note(err error, now time.Time) error {
	if errors.Is(err, cks.ErrUnavailable) {
		f.mu.Lock()
		f.err, f.at = err, now
		f.mu.Unlock()
	}
	return err
}

// Recent returns the fault noted within FaultMemory before now, or nil.
func (f *Faults) Recent(now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil || now.Sub(f.at) >= FaultMemory {
		return nil
	}
	return f.err
}
