package llm

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"sort"
	"strings"
)

// BM25 parameters of Corpus.Search.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Corpus is a set of passages and a BM25 index over them. It is read-only
// once loaded and safe for concurrent use.
type Corpus struct {
	passages []Passage
	byID     map[string]int
	lengths  []int                // terms per passage
	postings map[string][]posting // term → passages holding it, in corpus order
	avgLen   float64
}

type posting struct {
	doc int
	tf  int
}

// LoadCorpus reads every .md and .txt file under dir (recursively, in
// sorted path order; files and directories whose names start with "." are
// skipped, and so is a README.md at the top of dir, which describes the
// corpus rather than belonging to it) and indexes its passages.
//
// Markdown is split by heading section and then by blank-line paragraph (a
// fenced code block stays in one paragraph); each passage keeps the nearest
// heading above it. A .txt file is split by paragraph. Passage IDs are
// "PATH#N": PATH relative to dir with forward slashes, N counting the
// file's passages from 1, so they are stable across loads of the same
// files. The index is BM25 (k1 1.2, b 0.75) over the terms of the heading
// and the text: lower-cased letters-and-digits runs, a small English
// stop-word list dropped, plurals stripped.
//
// A dir that does not exist, is not a directory, or holds no passage is an
// error naming it.
func LoadCorpus(dir string) (*Corpus, error) {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("corpus %q: directory does not exist", dir)
	case err != nil:
		return nil, fmt.Errorf("corpus %q: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("corpus %q: not a directory", dir)
	}
	c, err := load(os.DirFS(dir), ".")
	if err != nil {
		return nil, fmt.Errorf("corpus %q: %w", dir, err)
	}
	return c, nil
}

// LoadCorpusFS is LoadCorpus over the directory root of fsys (use "." for
// all of it), e.g. a corpus embedded in the binary. Passage IDs are
// relative to root.
func LoadCorpusFS(fsys fs.FS, root string) (*Corpus, error) {
	st, err := fs.Stat(fsys, root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("corpus %q: directory does not exist", root)
	case err != nil:
		return nil, fmt.Errorf("corpus %q: %w", root, err)
	case !st.IsDir():
		return nil, fmt.Errorf("corpus %q: not a directory", root)
	}
	c, err := load(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("corpus %q: %w", root, err)
	}
	return c, nil
}

func load(fsys fs.FS, root string) (*Corpus, error) {
	var files []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		if root == "." {
			rel = p
		}
		if strings.EqualFold(rel, "README.md") {
			return nil
		}
		switch strings.ToLower(path.Ext(p)) {
		case ".md", ".markdown", ".txt":
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)

	c := &Corpus{byID: map[string]int{}, postings: map[string][]posting{}}
	total := 0
	for _, p := range files {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		rel := p
		if root != "." {
			rel = strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		}
		md := strings.ToLower(path.Ext(p)) != ".txt"
		for i, para := range splitPassages(string(b), md) {
			doc := len(c.passages)
			id := fmt.Sprintf("%s#%d", rel, i+1)
			c.passages = append(c.passages, Passage{ID: id, Source: rel, Heading: para.heading, Text: para.text})
			c.byID[id] = doc
			tf := map[string]int{}
			n := 0
			for _, t := range Terms(para.heading + "\n" + para.text) {
				tf[t]++
				n++
			}
			c.lengths = append(c.lengths, n)
			total += n
			for t, k := range tf {
				c.postings[t] = append(c.postings[t], posting{doc: doc, tf: k})
			}
		}
	}
	if len(c.passages) == 0 {
		return nil, fmt.Errorf("no passages (no non-empty .md or .txt file)")
	}
	c.avgLen = float64(total) / float64(len(c.passages))
	return c, nil
}

type para struct{ heading, text string }

// splitPassages cuts a file into paragraphs; for Markdown, ATX headings
// ("# …" to "###### …") end a paragraph and become the heading of those
// that follow, and fenced code blocks are kept whole.
func splitPassages(s string, markdown bool) []para {
	var out []para
	var heading string
	var cur []string
	inFence := false
	flush := func() {
		text := strings.TrimSpace(strings.Join(cur, "\n"))
		cur = nil
		if text != "" {
			out = append(out, para{heading: heading, text: text})
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		if markdown && strings.HasPrefix(trimmed, "```") {
			inFence = !inFence
			cur = append(cur, line)
			continue
		}
		if inFence {
			cur = append(cur, line)
			continue
		}
		if markdown {
			if h, ok := atxHeading(trimmed); ok {
				flush()
				heading = h
				continue
			}
		}
		if trimmed == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

func atxHeading(l string) (string, bool) {
	n := 0
	for n < len(l) && l[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(l) && l[n] != ' ' && l[n] != '\t') {
		return "", false
	}
	h := strings.TrimSpace(l[n:])
	h = strings.TrimSpace(strings.TrimRight(h, "#"))
	return h, true
}

// Len is the number of passages.
func (c *Corpus) Len() int { return len(c.passages) }

// passage returns the passage with the given ID (without a Score).
func (c *Corpus) passage(id string) (Passage, bool) {
	i, ok := c.byID[id]
	if !ok {
		return Passage{}, false
	}
	return c.passages[i], true
}

// Search returns at most k passages matching query by BM25, each with its
// Score, highest first; equal scores are ordered by ID. Passages sharing no
// term with the query are not returned; k <= 0 returns every match.
func (c *Corpus) Search(query string, k int) []Passage {
	qs := termSet(query)
	if len(qs) == 0 {
		return nil
	}
	n := float64(len(c.passages))
	qterms := make([]string, 0, len(qs))
	for t := range qs {
		qterms = append(qterms, t)
	}
	sort.Strings(qterms) // a fixed order of float additions: equal inputs, equal scores
	scores := map[int]float64{}
	for _, t := range qterms {
		ps := c.postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := 1 - bm25B + bm25B*float64(c.lengths[p.doc])/c.avgLen
			scores[p.doc] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*norm)
		}
	}
	out := make([]Passage, 0, len(scores))
	for doc, s := range scores {
		p := c.passages[doc]
		p.Score = s
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out
}
