package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
)

// TestObjectEditFork: two `cks object edit` from the same base fork the
// object; `cks object show` marks it FORKED and shows both heads' differing
// field values side by side (equal fields once); `cks object versions`
// lists the DAG; the --json forms parse; bad input is refused and writes
// nothing.
func TestObjectEditFork(t *testing.T) {
	h := startHub(t, "serve")
	dir := string(h.dir)
	run := func(args ...string) result {
		t.Helper()
		return runCKS(t, nil, append(args, "--data-dir", dir)...)
	}
	r := run("research", "Which edit wins?")
	if r.code != 0 {
		t.Fatalf("research: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := questionID(t, r)

	versions := func() cks.VersionList {
		t.Helper()
		r := run("object", "versions", id, "--json")
		var l cks.VersionList
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || r.code != 0 {
			t.Fatalf("object versions --json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		return l
	}
	l := versions()
	if len(l.Versions) != 1 || l.Forked {
		t.Fatalf("fresh object's versions: %+v", l)
	}
	base := fmt.Sprint(l.Versions[0].Version)

	r = run("object", "edit", id, "--base", base, "--set", "question=Alpha, first", "--set", "tags=[\"x\"]")
	if r.code != 0 {
		t.Fatalf("first edit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantAll(t, "first edit", r.stdout, "wrote v", "based on v"+base, "is the only head")
	r = run("object", "edit", id, "--base", base, "--set", "question=Beta, second", "--set", "tags=[\"x\"]", "--json")
	var second cks.Version
	if err := json.Unmarshal([]byte(r.stdout), &second); err != nil || r.code != 0 || fmt.Sprint(second.Parents) != "["+base+"]" {
		t.Fatalf("second edit --json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}

	r = run("object", "show", id)
	if r.code != 0 {
		t.Fatalf("object show: exit %d\n%s", r.code, r.stderr)
	}
	l = versions()
	if len(l.Heads) != 2 || !l.Forked || l.Heads[1] != second.Version {
		t.Fatalf("versions after two edits from one base: %+v", l)
	}
	wantAll(t, "object show (forked)", r.stdout,
		fmt.Sprintf("FORKED: 2 heads (v%d, v%d) — fork_detection will enqueue a resolve_fork task", l.Heads[0], l.Heads[1]),
		"Heads side by side", fmt.Sprintf("v%d by admin", l.Heads[0]), fmt.Sprintf("v%d by admin", l.Heads[1]),
		`"Alpha, first"`, `"Beta, second"`, "Same in all heads:", `["x"]`)
	// The differing field is one row holding both values; the equal one is
	// listed once.
	var row string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "Alpha") {
			row = line
		}
	}
	if !strings.Contains(row, "question") || !strings.Contains(row, "Beta") {
		t.Errorf("no side-by-side row for question: %q\n%s", row, r.stdout)
	}
	if n := strings.Count(r.stdout, `["x"]`); n != 1 {
		t.Errorf(`the equal field tags is shown %d times, want once:\n%s`, n, r.stdout)
	}

	r = run("object", "show", id, "--json")
	var v cks.ObjectView
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || !v.Forked || len(v.Heads) != 2 {
		t.Fatalf("object show --json: %v, forked %v, %d heads\n%s", err, v.Forked, len(v.Heads), r.stdout)
	}

	r = run("object", "versions", id)
	wantAll(t, "object versions", r.stdout, "VERSION", "PARENTS", "v"+base, "head", "FORKED: 2 heads")

	// Without --base: from the latest version, which it replaces as a head.
	r = run("object", "edit", id, "--content", `{"question":"Gamma"}`)
	if r.code != 0 {
		t.Fatalf("edit without --base: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantAll(t, "edit without --base", r.stdout, fmt.Sprintf("based on v%d", second.Version), "FORKED: 2 heads")

	// Bad input: refused, nothing written.
	before := len(versions().Versions)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--base", "999999", "--content", `{"question":"x"}`}, 1, "invalid --base: expected a version of object"},
		{[]string{"--base", base, "--content", `["not","an","object"]`}, 1, "content"},
		{[]string{"--base", base, "--content", `{not json`}, 2, "not valid JSON"},
		{[]string{"--base", "999999", "--set", "question=x"}, 1, "no version 999999"},
		{[]string{"--base", base}, 2, "--content"},
		{[]string{"--base", base, "--content", `{}`, "--set", "a=b"}, 2, "not both"},
		{[]string{"--set", "novalue"}, 2, "FIELD=VALUE"},
	} {
		r := run(append([]string{"object", "edit", id}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("object edit %v: exit %d %q, want exit %d naming %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
	if r := run("object", "edit", "999999", "--base", "1", "--content", "{}"); r.code != 1 || !strings.Contains(r.stderr, "HTTP 404") {
		t.Errorf("edit of an unknown object: exit %d %s", r.code, r.stderr)
	}
	if after := len(versions().Versions); after != before {
		t.Errorf("%d versions after refused edits, want %d", after, before)
	}
}
