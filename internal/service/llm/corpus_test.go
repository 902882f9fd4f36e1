package llm

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cks-dev/cks/internal/base/corpus"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadCorpusSplitsPassages(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"b.md":         "Intro paragraph before any heading.\n\n# First\n\nOne.\nStill one.\n\nTwo.\n\n## Second ##\n\n```\n# not a heading\n\ncode stays whole\n```\n\n### Empty\n",
		"a/c.txt":      "plain one\n\n\nplain two\n",
		"README.md":    "About the corpus: skipped.",
		"a/README.md":  "Nested readme is content.",
		"notes.json":   "{\"ignored\": true}",
		".hidden/x.md": "hidden, skipped",
		"a/.secret.md": "hidden, skipped",
		"empty.md":     "\n\n   \n",
	})
	c, err := LoadCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Passage{
		{ID: "a/README.md#1", Source: "a/README.md", Text: "Nested readme is content."},
		{ID: "a/c.txt#1", Source: "a/c.txt", Text: "plain one"},
		{ID: "a/c.txt#2", Source: "a/c.txt", Text: "plain two"},
		{ID: "b.md#1", Source: "b.md", Text: "Intro paragraph before any heading."},
		{ID: "b.md#2", Source: "b.md", Heading: "First", Text: "One.\nStill one."},
		{ID: "b.md#3", Source: "b.md", Heading: "First", Text: "Two."},
		{ID: "b.md#4", Source: "b.md", Heading: "Second", Text: "```\n# not a heading\n\ncode stays whole\n```"},
	}
	if !reflect.DeepEqual(c.passages, want) {
		t.Fatalf("passages:\n got %#v\nwant %#v", c.passages, want)
	}
	if c.Len() != len(want) {
		t.Fatalf("Len = %d", c.Len())
	}
	p, ok := c.passage("b.md#3")
	if !ok || p.Text != "Two." || p.Heading != "First" {
		t.Fatalf("passage(b.md#3) = %+v, %v", p, ok)
	}
	if _, ok := c.passage("b.md#99"); ok {
		t.Fatal("Passage of an unknown id found")
	}
}

func TestLoadCorpusStableIDs(t *testing.T) {
	a, err := LoadCorpus("../../base/corpus")
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadCorpus("../../base/corpus")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.passages, b.passages) {
		t.Fatal("two loads of the same corpus differ")
	}
	// The embedded copy is the same corpus with the same ids.
	e, err := LoadCorpusFS(corpus.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.passages, e.passages) {
		t.Fatal("the embedded corpus differs from the directory")
	}
	if a.Len() < 40 {
		t.Fatalf("shipped corpus has only %d passages", a.Len())
	}
	for _, p := range a.passages {
		if strings.HasPrefix(p.ID, "README.md") {
			t.Fatal("the corpus README was indexed")
		}
	}
}

func TestLoadCorpusErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	file := writeFiles(t, map[string]string{"f.md": "text"})
	empty := writeFiles(t, map[string]string{"README.md": "only a readme", "x.go": "package x", "blank.md": "\n\n"})
	for _, tc := range []struct {
		dir, want string
	}{
		{missing, "does not exist"},
		{filepath.Join(file, "f.md"), "not a directory"},
		{empty, "no passages"},
		{t.TempDir(), "no passages"},
	} {
		_, err := LoadCorpus(tc.dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.dir) {
			t.Errorf("LoadCorpus(%s) = %v, want an error naming the path and saying %q", tc.dir, err, tc.want)
		}
	}
	if _, err := LoadCorpusFS(corpus.FS, "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("LoadCorpusFS(nope) = %v", err)
	}
}

func TestSearchBM25(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"a.md": "# Ledger\n\nThe task ledger holds every task and its lease.\n\nA task lease expires after five minutes.\n\nTasks move between states.",
		"b.md": "# Sweepers\n\nThe lease reaper is a sweeper that reclaims a task.\n\nThe zeppelin sweeper is imaginary and reclaims a task too.",
		"c.md": "Unrelated text about cooking pasta.",
	})
	c, err := LoadCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	// "zeppelin" is in one passage only: it must rank first even though the
	// common terms are everywhere.
	got := c.Search("task lease zeppelin", 3)
	if len(got) != 3 || got[0].ID != "b.md#2" {
		t.Fatalf("Search = %+v, want b.md#2 first", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Score > got[i-1].Score {
			t.Fatalf("not ordered by score: %+v", got)
		}
	}
	if got[0].Score <= 0 {
		t.Fatal("no score")
	}
	// Deterministic, ties by id.
	for range 20 {
		if again := c.Search("task lease zeppelin", 3); !reflect.DeepEqual(again, got) {
			t.Fatalf("Search not deterministic: %+v vs %+v", again, got)
		}
	}
	dup := writeFiles(t, map[string]string{"z.md": "same words here", "y.md": "same words here", "x.md": "other"})
	cd, err := LoadCorpus(dup)
	if err != nil {
		t.Fatal(err)
	}
	ties := cd.Search("words", 0)
	if len(ties) != 2 || ties[0].ID != "y.md#1" || ties[1].ID != "z.md#1" || ties[0].Score != ties[1].Score {
		t.Fatalf("ties = %+v, want y.md#1, z.md#1 with equal scores", ties)
	}
	if r := c.Search("the of and", 5); len(r) != 0 {
		t.Fatalf("stop words matched: %+v", r)
	}
	if r := c.Search("quantum", 5); len(r) != 0 {
		t.Fatalf("absent term matched: %+v", r)
	}
	// Plurals meet singulars.
	if r := c.Search("sweeper", 1); len(r) == 0 || r[0].Source != "b.md" {
		t.Fatalf("Search(sweeper) = %+v", r)
	}
}

func TestTerms(t *testing.T) {
	got := Terms("How do the Sweepers stop across nodes? stale_stop_report, processes, dependencies; it's 3 × 30s")
	want := []string{"sweeper", "stop", "across", "node", "stale", "stop", "report", "process", "dependency", "3", "30s"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("terms = %q, want %q", got, want)
	}
}

func TestSentences(t *testing.T) {
	got := sentences("First one, e.g. this. Second one!\nStill second? Third\n- item one\n- item two.\n| a | b |\n|---|---|\n| c | d |")
	want := []string{"First one, e.g. this.", "Second one!", "Still second?", "Third", "item one", "item two.", "a ; b", "c ; d"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sentences = %q, want %q", got, want)
	}
}
