package knowledge

import (
	"context"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/jsonlines"
	"github.com/cks-dev/cks/internal/driver"
)

// PurgeBatch is how many log rows one transaction of ArchiveFinalLogs
// deletes.
const PurgeBatch = 500

// ArchiveFinalLogs removes old transition-log rows (the retention sweeper,
// only when the operator set CKS_RETENTION_KNOWLEDGE; the log is audit
// data): up to maxRows rows older than before of objects in a final status
// (cks.FinalStatuses) last changed before before, a batch at a time. Each
// batch is handed to archive first; only once archive returned nil is it
// deleted, in one short transaction (driver TransitionPurge, which checks
// the rule again there). The object rows, versions and edges stay: the
// object's status is on its row. It returns how many rows it deleted.
func (s *Service) ArchiveFinalLogs(ctx context.Context, before time.Time, maxRows int, archive func([]cks.TransitionEntry) error) (int, error) {
	total := 0
	for total < maxRows {
		limit := min(PurgeBatch, maxRows-total)
		rows, err := s.db.Executor().TransitionPurgeCandidates(ctx, driver.TransitionPurgeCandidatesParams{
			Statuses: cks.FinalStatuses, Before: before, Limit: limit})
		if err != nil {
			return total, fmt.Errorf("archive knowledge log: %w", err)
		}
		if len(rows) == 0 {
			break
		}
		entries := make([]cks.TransitionEntry, len(rows))
		seqs := make([]int64, len(rows))
		for i, r := range rows {
			entries[i], seqs[i] = entryView(r), r.Seq
		}
		if err := archive(entries); err != nil {
			return total, fmt.Errorf("archive knowledge log: %w", err)
		}
		var deleted []int64
		err = s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
			var err error
			deleted, err = ex.TransitionPurge(ctx, driver.TransitionPurgeParams{Seqs: seqs, Statuses: cks.FinalStatuses, Before: before})
			return err
		})
		if err != nil {
			return total, fmt.Errorf("delete archived knowledge log: %w", err)
		}
		if total += len(deleted); len(rows) < limit {
			break
		}
	}
	return total, nil
}

// ArchivedEntry is one line of a knowledge archive (JSON lines): a
// transition-log row as get_object reads it, and when it was archived.
type ArchivedEntry struct {
	ArchivedAt time.Time           `json:"archived_at"`
	Entry      cks.TransitionEntry `json:"entry"`
}

// FileArchive returns an archive for ArchiveFinalLogs that appends each
// entry as a line of JSON (ArchivedEntry) to the file at path, created
// 0600 with its directory (0700) when missing, and syncs the file before
// it returns, so that nothing is deleted before its line is on disk.
func FileArchive(path string, now func() time.Time) func([]cks.TransitionEntry) error {
	return func(entries []cks.TransitionEntry) error {
		at := now().UTC()
		lines := make([]ArchivedEntry, len(entries))
		for i, x := range entries {
			lines[i] = ArchivedEntry{ArchivedAt: at, Entry: x}
		}
		return jsonlines.Append(path, lines)
	}
}
