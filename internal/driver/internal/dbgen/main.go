// Command dbgen writes and checks the generated code of the drivers: the one
// generator between the table list, the query files and the Go that runs
// them. go generate in internal/driver/sqlite and internal/driver/postgres
// runs
//
//	go run ../internal/dbgen generate
//
// which writes, in the driver's directory,
//
//   - internal/dbsqlc/schema.sql: the DDL of an empty database of the
//     dialect, as package internal/driver/schema renders it (to read, and
//     for scripts/index-cost);
//   - internal/dbsqlc/queries_gen.go (emit.go): per table its row type, per
//     query of the .sql files there its SQL (stars expanded, parameters
//     numbered), its parameter and result types (infer.go: what each
//     parameter is cast to, compared with, assigned or inserted into; what
//     each result column names or is cast to) and the method that runs it;
//   - executor_gen.go (adapt.go): the primitives that map onto a query one
//     to one, and the mapping of rows and params, for both dialects from
//     one generator.
//
// check, run by scripts/test from the module root, proves the committed code
// is current: each file must be what generate writes now, so a query edited
// without regenerating, or a generated file edited by hand, fails it,
// naming the file.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/cks-dev/cks/internal/driver/schema"
)

func main() {
	if len(os.Args) != 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "generate":
		var dir string
		if dir, err = os.Getwd(); err == nil {
			err = generate(dir)
		}
	case "check":
		err = check()
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dbgen:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: dbgen generate (in a driver's directory) | dbgen check (in the module root)")
	os.Exit(2)
}

// render renders the generated files of the driver in dir, by their paths
// in it: schema.sql; queries_gen.go, every query's SQL and types and the
// method of each query something calls; executor_gen.go, which adapt
// writes from the driver's interfaces, its hand-written files and the
// queries (all their methods, so that what it generates does not depend
// on what it generated before). A query that nothing uses — no method
// called, no SQL run — is an error: it is to be deleted.
func render(dir string) (map[string][]byte, error) {
	d, err := dialectOf(dir)
	if err != nil {
		return nil, err
	}
	as, cat, err := analyzeDir(d, filepath.Join(dir, "internal", "dbsqlc"))
	if err != nil {
		return nil, err
	}
	all, err := emitQueries(d, cat, as, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	exec, err := adaptSource(dir, all)
	if err != nil {
		return nil, err
	}
	// What calls the queries: the driver's own files (tests too) and the
	// executor adapt writes.
	var callers bytes.Buffer
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	for _, name := range files {
		if filepath.Base(name) == genFile {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		callers.Write(b)
	}
	callers.Write(exec)
	text := callers.String()
	// A method is called through the Queries, which its callers name q
	// (e.d.q.TaskGet(…), or a method value e.d.q.TaskPurgeDeps); a query
	// whose method nothing calls may still run, by its SQL's name
	// (dbsqlc.TaskList in a scan of executor_gen.go).
	calls, sqls := matches(text, `(?:^|\W)q\.(\w+)`), matches(text, `\bdbsqlc\.(\w+)`)
	called := func(q string) bool { return calls[q] }
	var unused []string
	for _, a := range as {
		if !calls[a.q.name] && !sqls[a.q.name] {
			unused = append(unused, a.q.name)
		}
	}
	if len(unused) > 0 {
		return nil, fmt.Errorf("%s: queries nothing uses (delete them): %s", dir, strings.Join(unused, ", "))
	}
	queries, err := emitQueries(d, cat, as, called)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		filepath.Join("internal", "dbsqlc", "schema.sql"): schemaSQL(d),
		filepath.Join("internal", "dbsqlc", queriesFile):  queries,
		genFile: exec,
	}, nil
}

// names is the set of the first submatches of pattern in text.
func matches(text, pattern string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// dialectOf is the dialect of the driver in dir.
func dialectOf(dir string) (schema.Dialect, error) {
	d := schema.Dialect(filepath.Base(dir))
	if !slices.Contains(schema.Dialects[:], d) {
		return "", fmt.Errorf("%s is no driver directory", dir)
	}
	return d, nil
}

// generate writes the generated files of the driver in dir.
func generate(dir string) error {
	files, err := render(dir)
	if err != nil {
		return err
	}
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(dir, path), files[path], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// schemaSQL is the schema.sql of dialect d.
func schemaSQL(d schema.Dialect) []byte {
	return []byte("-- Code generated by internal/driver/internal/dbgen from internal/driver/schema. DO NOT EDIT.\n\n" +
		schema.Script(schema.Fresh(d)))
}

// check verifies both dialects' generated files against their sources, from
// the module root.
func check() error {
	var errs []error
	for _, d := range schema.Dialects {
		dir, err := filepath.Abs(filepath.Join("internal", "driver", string(d)))
		if err != nil {
			return err
		}
		files, err := render(dir)
		if err != nil {
			return err
		}
		for _, path := range slices.Sorted(maps.Keys(files)) {
			rel := filepath.Join("internal", "driver", string(d), path)
			if have, err := os.ReadFile(rel); err != nil || !bytes.Equal(have, files[path]) {
				errs = append(errs, fmt.Errorf("%s is not what dbgen generate writes", rel))
			}
		}
	}
	if len(errs) > 0 {
		errs = append(errs, errors.New("run go generate ./internal/driver/... and commit what it changes"))
	}
	return errors.Join(errs...)
}
