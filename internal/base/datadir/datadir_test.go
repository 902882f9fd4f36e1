package datadir_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/base/datadir"
)

func mode(t testing.TB, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestFilesAreOwnerOnly: the directory is created 0700 and the token and
// URL files 0600, also over an existing file with looser bits.
func TestFilesAreOwnerOnly(t *testing.T) {
	d := datadir.Dir(filepath.Join(t.TempDir(), "a", ".cks"))
	if err := d.WriteToken("cks_x"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.URLFile(), []byte("old\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteURL("http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{string(d): 0o700, d.TokenFile(): 0o600, d.URLFile(): 0o600} {
		if got := mode(t, path); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
	if got := d.Exposed(); len(got) != 0 {
		t.Errorf("Exposed() = %v of a directory cks made, want none", got)
	}
}

// TestExposedNamesLooseModes: Exposed names what others may read or enter,
// and changes nothing.
func TestExposedNamesLooseModes(t *testing.T) {
	d := datadir.Dir(t.TempDir())
	os.Chmod(string(d), 0o755)
	os.WriteFile(filepath.Join(string(d), "cks.db"), nil, 0o644)
	os.WriteFile(d.TokenFile(), []byte("cks_x\n"), 0o600)
	got := d.Exposed()
	want := map[string]os.FileMode{string(d): 0o755, filepath.Join(string(d), "cks.db"): 0o644}
	if len(got) != len(want) {
		t.Fatalf("Exposed() = %v, want %v", got, want)
	}
	for _, e := range got {
		if want[e.Path] != e.Mode {
			t.Errorf("exposed %s %v, want %v", e.Path, e.Mode, want[e.Path])
		}
	}
	if mode(t, string(d)) != 0o755 {
		t.Fatal("Exposed changed the directory's mode")
	}
}

// TestLock: one holder at a time, the second told who holds it; released
// by Unlock.
func TestLock(t *testing.T) {
	d := datadir.Dir(filepath.Join(t.TempDir(), "new"))
	l, err := d.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if got := mode(t, d.LockFile()); got != 0o600 {
		t.Errorf("lock file mode %v, want 0600", got)
	}
	_, err = d.Lock()
	if !errors.Is(err, datadir.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Fatalf("second Lock: %v, want ErrLocked naming process %d", err, os.Getpid())
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l, err = d.Lock()
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	l.Unlock()
}

// TestFind: a command that names no data directory uses the nearest .cks
// in its working directory or above it, as git finds .git; a file named
// .cks is no data directory; with none anywhere above, ./.cks.
func TestFind(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := datadir.Find(sub); got != datadir.Default {
		t.Fatalf("Find with no .cks above = %q, want %q", got, datadir.Default)
	}
	if err := os.Mkdir(filepath.Join(root, ".cks"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a", ".cks"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want datadir.Dir
	}{
		{sub, datadir.Dir(filepath.Join(root, ".cks"))},
		{filepath.Join(root, "a"), datadir.Dir(filepath.Join(root, ".cks"))},
		{root, datadir.Default},
	} {
		if got := datadir.Find(c.dir); got != c.want {
			t.Errorf("Find(%s) = %q, want %q", c.dir, got, c.want)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "a", "b", ".cks"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got, want := datadir.Find(sub), datadir.Dir(filepath.Join(root, "a", "b", ".cks")); got != want {
		t.Errorf("Find(%s) = %q, want the nearest, %q", sub, got, want)
	}
	// A relative directory is taken from the working directory.
	t.Chdir(sub)
	if got, want := datadir.Find("."), datadir.Dir(filepath.Join(root, "a", "b", ".cks")); got != want {
		t.Errorf("Find(.) in %s = %q, want %q", sub, got, want)
	}
}
