// Package datadir knows the layout of a cks data directory (default ./.cks): the
// embedded database, the admin token file and the URL of the hub that last
// served from it. The CLI finds a local hub through it without any flags.
//
// The directory holds task payloads (in the database) and the admin token, so
// cks creates it 0700 and its files 0600. It does not tighten an existing
// directory's or file's mode behind the user's back (a group may share it on
// purpose); Exposed names what others may read, and a hub warns about it.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cks-dev/cks/internal/config"
)

// Default is the data directory used when none is given and Find finds
// none: ./.cks, which a hub creates (CKS_DATA_DIR's default).
const Default = config.DefaultDataDir

// Find is the data directory of a command run in directory dir that names
// none: the nearest directory named .cks in dir or above it, as git finds
// .git — Default when that is dir's own, its absolute path when it is an
// ancestor's — and Default when there is none (a file named .cks does not
// count). A relative dir is taken from the working directory.
func Find(dir string) Dir {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Default
	}
	for d := abs; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, Default)); err == nil && st.IsDir() {
			if d == abs {
				return Default
			}
			return Dir(filepath.Join(d, Default))
		}
		if filepath.Dir(d) == d {
			return Default
		}
	}
}

// Dir is a data directory path.
type Dir string

// DatabaseURL is the embedded SQLite database of the directory.
func (d Dir) DatabaseURL() string { return "sqlite:" + filepath.Join(string(d), "cks.db") }

// TokenFile holds the admin bearer token, mode 0600.
func (d Dir) TokenFile() string { return filepath.Join(string(d), "admin.token") }

// URLFile holds the base URL of the hub serving from this directory.
func (d Dir) URLFile() string { return filepath.Join(string(d), "hub.url") }

// ReadToken returns the admin token stored in the directory.
func (d Dir) ReadToken() (string, error) { return readLine(d.TokenFile()) }

// ReadURL returns the hub URL stored in the directory.
func (d Dir) ReadURL() (string, error) { return readLine(d.URLFile()) }

// WriteToken stores tok with mode 0600, creating the directory.
func (d Dir) WriteToken(tok string) error { return writeFile(d.TokenFile(), tok, 0o600) }

// WriteURL stores the hub URL with mode 0600, creating the directory.
func (d Dir) WriteURL(url string) error { return writeFile(d.URLFile(), url, 0o600) }

// DirMode is the mode cks creates a data directory with; FileMode that of
// the files in it (SQLite gives its -wal and -shm files the database's).
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// MkdirAll creates the directory (and its parents) with DirMode; an
// existing one is left as it is.
func (d Dir) MkdirAll() error { return os.MkdirAll(string(d), DirMode) }

// Exposure is a path of the data directory others may read or enter.
type Exposure struct {
	Path string
	Mode os.FileMode
}

// Exposed returns the directory and those of its files (database, its WAL
// and shared-memory files, token, URL) that exist with any permission for
// group or others. It changes nothing.
func (d Dir) Exposed() []Exposure {
	db := filepath.Join(string(d), "cks.db")
	var out []Exposure
	for _, p := range []string{string(d), db, db + "-wal", db + "-shm", d.TokenFile(), d.URLFile()} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
			out = append(out, Exposure{Path: p, Mode: st.Mode().Perm()})
		}
	}
	return out
}

// RemoveURL forgets the hub URL (on graceful hub shutdown). A missing file is fine.
func (d Dir) RemoveURL() error {
	err := os.Remove(d.URLFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

func readLine(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

func writeFile(path, content string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content+"\n"), mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil { // WriteFile keeps an existing file's mode
		return err
	}
	return os.Rename(tmp, path)
}
