// Package jsonlines appends records to a file as lines of JSON, durably:
// the archives retention writes before it deletes (tasks, knowledge logs)
// must be on disk before the rows they hold are gone.
package jsonlines

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Append writes each record as one line of JSON at the end of the file at
// path, created 0600 with its directory (0700) when missing, and syncs the
// file before it returns: a nil error means every line is on disk.
func Append[T any](path string, records []T) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
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
	return f.Sync()
}
