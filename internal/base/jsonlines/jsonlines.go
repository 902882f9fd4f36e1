// Package jsonlines appends records to a file as lines of JSON, durably:
// the archives retention writes before it deletes (tasks, knowledge logs)
// must be on disk before the rows they hold are gone.
package jsonlines

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// Append writes each record as one line of JSON at the end of the file at
// path, created 0600 with its directory (0700) when missing, and syncs the
// file (and, for a new file, its directory) before it returns: a nil error
// means every line is on disk.
//
// It is safe against a crash of an earlier Append (kill -9, power loss):
// the writer holds an exclusive lock on the file (flock) while it appends,
// so a file that does not end in a newline under that lock holds the torn
// line of an Append that never returned, and it is cut off before the new
// lines are written — every line stays one whole record of valid JSON.
// Nothing is lost by the cut: the caller deletes the rows a line holds
// only once Append has returned nil, so a torn line's rows are still there
// and a later Append writes them again (a line may then repeat one that
// was whole before the crash: readers take the last line of a record).
func Append[T any](path string, records []T) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, os.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	if err := cutTornLine(f); err != nil {
		return fmt.Errorf("repair %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i, r := range records {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if created {
		return syncDir(dir)
	}
	return nil
}

// cutTornLine truncates f after its last newline when it does not end in
// one: the torn line of a writer that died mid-append.
func cutTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	if end == 0 {
		return nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, end-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	buf := make([]byte, 64<<10)
	for off := end; off > 0; {
		n := min(int64(len(buf)), off)
		off -= n
		if _, err := f.ReadAt(buf[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return f.Truncate(off + int64(i) + 1)
		}
	}
	return f.Truncate(0)
}

// syncDir syncs directory dir, so that a file created in it survives a
// crash along with its contents.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
