package llm

import (
	"sort"
	"strings"
	"unicode"
)

// stopWords are dropped by terms: function words, and the filler of
// questions ("what happens", "how does"), which say nothing about the topic.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a about above after again against all also am an and any are as at
		be because been before being below between both but by can cannot
		could did do does doing done down during each either else etc every
		few for from further get gets got had has have having he her here
		hers him his how i if in into is it its itself just let lets may me
		might more most must my neither no nor not of off often on once only
		or other our ours out over own per same shall she should so some
		such than that the their theirs them then there these they this
		those through thus to too under until up upon us very via was we
		were what whatever when whenever where whether which while who whom
		whose why will with within without would yet you your yours
		happen happens happened explain describe tell mean means`) {
		m[w] = true
	}
	return m
}()

// Terms splits s into the index terms the corpus, the retrieval and the
// offline heuristics share (the knowledge agents match text with them too): lower-cased runs of letters and digits (so
// "stale_stop_report" is three terms and "don't" two), without stop words
// and single letters, each through stem.
func Terms(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stopWords[f] {
			continue
		}
		if len([]rune(f)) == 1 && !unicode.IsDigit([]rune(f)[0]) {
			continue
		}
		out = append(out, stem(f))
	}
	return out
}

// stem is a trivial plural stripper (the first step of Porter's): "sses" →
// "ss", "ies" → "y", a final "s" is dropped unless the word ends in "ss",
// "us" or "is" or is three letters or shorter. "heartbeats" and "heartbeat"
// meet; "stopped" and "stop" do not, and need not.
func stem(w string) string {
	switch {
	case len(w) <= 3:
		return w
	case strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}

// termSet is the set of terms of s.
func termSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, t := range Terms(s) {
		m[t] = true
	}
	return m
}

// shared is the sorted terms of q that occur in s.
func shared(q, s map[string]bool) []string {
	var out []string
	for t := range q {
		if s[t] {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// sentences splits a passage's text into sentences: every Markdown list item
// or table row is one on its own, and running text is cut after ".", "!" or
// "?" followed by white space (not after "e.g." or "i.e."). White space is
// collapsed and list markers are dropped.
func sentences(text string) []string {
	var out []string
	var run []string
	flush := func() {
		if len(run) > 0 {
			out = append(out, splitRunning(strings.Join(run, " "))...)
			run = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		switch {
		case l == "", strings.HasPrefix(l, "```"):
			flush()
		case strings.HasPrefix(l, "|"):
			flush()
			row := strings.TrimSpace(strings.Trim(l, "|"))
			if strings.Trim(row, "-|: ") != "" {
				out = append(out, strings.Join(strings.Fields(strings.ReplaceAll(row, "|", ";")), " "))
			}
		case isListItem(l):
			flush()
			run = append(run, stripListMarker(l))
		default:
			run = append(run, l)
		}
	}
	flush()
	return out
}

func isListItem(l string) bool {
	return stripListMarker(l) != l
}

func stripListMarker(l string) string {
	for _, m := range []string{"- ", "* ", "+ ", "• "} {
		if strings.HasPrefix(l, m) {
			return strings.TrimSpace(l[len(m):])
		}
	}
	i := 0
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i > 0 && i+1 < len(l) && (l[i] == '.' || l[i] == ')') && l[i+1] == ' ' {
		return strings.TrimSpace(l[i+2:])
	}
	return l
}

func splitRunning(s string) []string {
	words := strings.Fields(s)
	var out []string
	start := 0
	for i, w := range words {
		if !strings.ContainsAny(w[len(w)-1:], ".!?") && !strings.HasSuffix(w, ".)") && !strings.HasSuffix(w, ".\"") {
			continue
		}
		lw := strings.ToLower(strings.Trim(w, "(\"'"))
		if lw == "e.g." || lw == "i.e." || lw == "vs." || lw == "etc.," {
			continue
		}
		out = append(out, strings.Join(words[start:i+1], " "))
		start = i + 1
	}
	if start < len(words) {
		out = append(out, strings.Join(words[start:], " "))
	}
	return out
}
