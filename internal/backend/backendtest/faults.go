package backendtest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// FaultStores opens handles on databases whose storage fails writes, the
// way each backend can arrange it in a test.
type FaultStores struct {
	// ReadOnly returns a handle on a database holding exactly the task
	// SeedTask, on which every write is refused (a read-only file, or a
	// server that runs transactions read-only).
	ReadOnly Opener
	// Full returns a handle on a database holding exactly SeedTask, with
	// room for a few more small writes at most; nil when the backend cannot
	// be filled in a test (its error mapping is then checked on its own).
	Full Opener
}

// SeedTask is the task FaultStores' databases hold.
var SeedTask = cks.NewTask{Type: "seed", Title: "written before the fault"}

// StorageFaults checks that writes the storage refuses fail with
// cks.ErrStorageReadOnly or cks.ErrStorageFull (both matching
// cks.ErrUnavailable) and write nothing, that reads keep working, and that
// StorageHealth reports the fault: a read-only database at once, a full one
// after a write met it, for driver.FaultMemory.
func StorageFaults(t *testing.T, f FaultStores) {
	t.Run("ReadOnly", func(t *testing.T) {
		t.Parallel()
		s := f.ReadOnly(t)
		if err := s.StorageHealth(Ctx(t)); !errors.Is(err, cks.ErrStorageReadOnly) || !errors.Is(err, cks.ErrUnavailable) {
			t.Fatalf("StorageHealth of a read-only database: %v, want ErrStorageReadOnly", err)
		}
		writes := map[string]func() error{
			"Enqueue": func() error {
				_, _, err := s.Tasks.Enqueue(Ctx(t), cks.NewTask{Type: "t", Title: "refused"})
				return err
			},
			"UpsertAgentLiveness": func() error { return s.Liveness.UpsertAgentLiveness(Ctx(t), Liveness("i-ro", "critic", 0)) },
			"SetSweeperDesiredRunning": func() error {
				return s.Sweepers.SetSweeperDesiredRunning(Ctx(t), "lease_reaper", false)
			},
			"Claim": func() error {
				_, err := s.Tasks.Claim(Ctx(t), ledger.ClaimParams{Worker: "w", N: 1, Lease: time.Minute})
				return err
			},
			"CreateObject": func() error {
				_, err := s.Objects.CreateObject(Ctx(t), knowledge.NewObject{Kind: "note", Title: "refused"})
				return err
			},
			// A token: principals are written outside the task ledger's
			// write path, and their faults are the storage's all the same.
			"CreatePrincipal": func() error {
				return s.Principals.CreatePrincipal(Ctx(t), cks.Principal{ID: "p-ro", Name: "refused", CreatedAt: T0}, "hash-ro",
					[]cks.Grant{{Resource: "/", Permission: "read"}})
			},
		}
		for name, write := range writes {
			err := write()
			if !errors.Is(err, cks.ErrStorageReadOnly) || !errors.Is(err, cks.ErrUnavailable) || errors.Is(err, cks.ErrInvalid) {
				t.Errorf("%s on a read-only database: %v, want ErrStorageReadOnly", name, err)
			}
		}
		page, err := s.Tasks.ListTasks(Ctx(t), cks.TaskFilter{})
		if err != nil || len(page.Tasks) != 1 || page.Tasks[0].Title != SeedTask.Title || page.Tasks[0].State != "OPEN" {
			t.Fatalf("reads of a read-only database: %+v %v, want the seed task alone, OPEN", page.Tasks, err)
		}
		if _, err := s.Liveness.GetAgentLiveness(Ctx(t), "i-ro"); !errors.Is(err, cks.ErrNotFound) {
			t.Fatalf("liveness row after a refused upsert: %v, want not found", err)
		}
	})
	t.Run("Full", func(t *testing.T) {
		if f.Full == nil {
			t.Skip("this backend's database cannot be filled in a test; its disk_full mapping is tested on its own")
		}
		t.Parallel()
		clk := clock.NewFake(T0)
		s := f.Full(t, driver.WithClock(clk))
		if err := s.StorageHealth(Ctx(t)); err != nil {
			t.Fatalf("StorageHealth before any write failed: %v", err)
		}
		payload, _ := json.Marshal(map[string]string{"filler": strings.Repeat("x", 8<<10)})
		var err error
		written := 0
		for ; written < 10000; written++ {
			if _, _, err = s.Tasks.Enqueue(Ctx(t), cks.NewTask{Type: "t", Title: "filler", Payload: payload}); err != nil {
				break
			}
		}
		if !errors.Is(err, cks.ErrStorageFull) || !errors.Is(err, cks.ErrUnavailable) {
			t.Fatalf("after %d writes: %v, want ErrStorageFull", written, err)
		}
		if n, cerr := s.Tasks.CountTasks(Ctx(t), cks.TaskFilter{}); cerr != nil || n != 1+written {
			t.Fatalf("%d tasks (%v) after %d writes and a failed one, want %d: the failed write must leave nothing", n, cerr, written, 1+written)
		}
		if err := s.StorageHealth(Ctx(t)); !errors.Is(err, cks.ErrStorageFull) {
			t.Fatalf("StorageHealth after a write met a full disk: %v, want ErrStorageFull", err)
		}
		clk.Advance(driver.FaultMemory - time.Second)
		if err := s.StorageHealth(Ctx(t)); !errors.Is(err, cks.ErrStorageFull) {
			t.Fatalf("StorageHealth within FaultMemory: %v, want ErrStorageFull", err)
		}
		clk.Advance(time.Second)
		if err := s.StorageHealth(Ctx(t)); err != nil {
			t.Fatalf("StorageHealth FaultMemory after the failed write: %v, want nil", err)
		}
	})
}
