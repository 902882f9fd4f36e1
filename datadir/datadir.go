// Package datadir knows the layout of a cks data directory (default ./.cks): the
// embedded database, the admin token file and the URL of the hub that last
// served from it. The CLI finds a local hub through it without any flags.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Default is the data directory used when none is given.
const Default = ".cks"

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

// WriteURL stores the hub URL, creating the directory.
func (d Dir) WriteURL(url string) error { return writeFile(d.URLFile(), url, 0o644) }

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
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
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
