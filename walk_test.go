package cks_test

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// walkFiles calls fn with the path of every file of the repository below
// the working directory, the root tests' one walk: hidden directories,
// testdata and node_modules are not the project's code, and skip names
// more directories to leave out.
func walkFiles(fn func(path string) error, skip ...string) error {
	return filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" ||
				name == "node_modules" || slices.Contains(skip, name)) {
				return filepath.SkipDir
			}
			return nil
		}
		return fn(path)
	})
}
