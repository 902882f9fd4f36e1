package datadir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cks-dev/cks/datadir"
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
