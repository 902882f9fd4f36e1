package llm

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Limits of the offline heuristics.
const (
	offlineMaxClaims       = 5 // claims per Research
	offlineMaxAnswerClaims = 3 // claims joined into one answer
)

// NewOffline returns the offline model (Name "offline"): deterministic, no
// network, the default provider. It does not retrieve — the Researcher step
// searches the corpus and passes the passages in — it applies these plain
// heuristics, which are part of the product and are what `cks research`
// does out of the box. "Terms" below are the corpus index terms of a text
// (lower-cased words without stop words, plurals stripped; see LoadCorpus),
// and the question's terms are its non-stop-word terms.
//
// Research: for each input passage, in the order given (best first), the
// sentence sharing the most distinct terms with the question (the first of
// equals) becomes a claim whose text is that sentence and which cites that
// passage. A passage none of whose sentences shares a term is skipped, a
// sentence already claimed (compared case-insensitively) is skipped, and at
// most 5 claims are made. Feedback and Round are not used: the same input
// gives the same claims, so a question the corpus cannot answer is parked
// by the pipeline's bounded rounds rather than answered worse.
//
// Critique: a claim is accepted iff it cites at least one of the input
// passages and shares at least one term with the question; the reason names
// the passages it cites and the shared terms, or says which test failed.
// Sufficient iff at least one claim is accepted.
//
// Synthesize: the claims (the pipeline passes the accepted ones), best
// first — most question terms shared, then input order — at most 3 of them,
// each followed by its citations as bracketed markers ("… [path.md#2]."),
// joined into one short answer; Citations are their passage ids, first
// mention first, without duplicates. No claims give an empty answer.
//
// Validate, in this order: invalid → BackToResearch if there are no claims
// to rest an answer on; invalid → BackToSynthesis if the answer is empty,
// cites nothing (neither Citations nor a bracketed marker), or cites an id
// that none of the claims cites; invalid → BackToResearch if the answer and
// the claims together contain fewer than half of the question's terms;
// otherwise valid. The rationale states the numbers: ids cited, terms
// covered out of the question's, and which are missing.
func NewOffline() Model { return offline{} }

type offline struct{}

func (offline) Name() string { return "offline" }

func (offline) Research(ctx context.Context, in ResearchInput) (ResearchOutput, error) {
	if err := ctx.Err(); err != nil {
		return ResearchOutput{}, err
	}
	q := termSet(in.Question)
	out := ResearchOutput{Claims: []Claim{}}
	seen := map[string]bool{}
	for _, p := range in.Passages {
		if len(out.Claims) == offlineMaxClaims {
			break
		}
		best, bestN := "", 0
		for _, s := range sentences(p.Text) {
			if n := len(shared(q, termSet(s))); n > bestN {
				best, bestN = s, n
			}
		}
		key := strings.ToLower(best)
		if bestN == 0 || seen[key] {
			continue
		}
		seen[key] = true
		out.Claims = append(out.Claims, Claim{Text: best, Citations: []string{p.ID}})
	}
	return out, nil
}

func (offline) Critique(ctx context.Context, in CritiqueInput) (CritiqueOutput, error) {
	if err := ctx.Err(); err != nil {
		return CritiqueOutput{}, err
	}
	q := termSet(in.Question)
	given := map[string]bool{}
	for _, p := range in.Passages {
		given[p.ID] = true
	}
	out := CritiqueOutput{Verdicts: make([]Verdict, 0, len(in.Claims))}
	accepted := 0
	for i, c := range in.Claims {
		var cites []string
		for _, id := range c.Citations {
			if given[id] {
				cites = append(cites, id)
			}
		}
		common := shared(q, termSet(c.Text))
		v := Verdict{Claim: i}
		switch {
		case len(cites) == 0 && len(c.Citations) == 0:
			v.Reason = "cites no passage"
		case len(cites) == 0:
			v.Reason = fmt.Sprintf("cites none of the given passages (%s)", strings.Join(c.Citations, ", "))
		case len(common) == 0:
			v.Reason = fmt.Sprintf("cites %s but shares no term with the question", strings.Join(cites, ", "))
		default:
			v.Accept = true
			accepted++
			v.Reason = fmt.Sprintf("cites %s and shares the question's terms %s", strings.Join(cites, ", "), strings.Join(common, ", "))
		}
		out.Verdicts = append(out.Verdicts, v)
	}
	out.Sufficient = accepted > 0
	if out.Sufficient {
		out.Summary = fmt.Sprintf("%d of %d claims accepted; enough to answer", accepted, len(in.Claims))
	} else {
		out.Summary = fmt.Sprintf("0 of %d claims accepted; more research needed", len(in.Claims))
	}
	return out, nil
}

func (offline) Synthesize(ctx context.Context, in SynthesisInput) (SynthesisOutput, error) {
	if err := ctx.Err(); err != nil {
		return SynthesisOutput{}, err
	}
	q := termSet(in.Question)
	order := make([]int, len(in.Claims))
	overlap := make([]int, len(in.Claims))
	for i, c := range in.Claims {
		order[i] = i
		overlap[i] = len(shared(q, termSet(c.Text)))
	}
	sort.SliceStable(order, func(a, b int) bool { return overlap[order[a]] > overlap[order[b]] })
	if len(order) > offlineMaxAnswerClaims {
		order = order[:offlineMaxAnswerClaims]
	}
	out := SynthesisOutput{Citations: []string{}}
	seen := map[string]bool{}
	var parts []string
	for _, i := range order {
		c := in.Claims[i]
		text := strings.TrimRight(strings.TrimSpace(c.Text), ".;: ")
		var marks strings.Builder
		for _, id := range c.Citations {
			marks.WriteString(" [" + id + "]")
			if !seen[id] {
				seen[id] = true
				out.Citations = append(out.Citations, id)
			}
		}
		parts = append(parts, text+marks.String()+".")
	}
	out.Answer = strings.Join(parts, " ")
	return out, nil
}

// citationMarker finds the bracketed passage ids in an answer.
var citationMarker = regexp.MustCompile(`\[([^\[\]\s]+#[0-9]+)\]`)

func (offline) Validate(ctx context.Context, in ValidationInput) (ValidationOutput, error) {
	if err := ctx.Err(); err != nil {
		return ValidationOutput{}, err
	}
	if len(in.Claims) == 0 {
		return ValidationOutput{SendBackTo: BackToResearch,
			Rationale: "no claims: there is nothing to rest an answer on"}, nil
	}
	if strings.TrimSpace(in.Answer) == "" {
		return ValidationOutput{SendBackTo: BackToSynthesis,
			Rationale: fmt.Sprintf("the answer is empty although %d claims were given", len(in.Claims))}, nil
	}
	claimed := map[string]bool{}
	for _, c := range in.Claims {
		for _, id := range c.Citations {
			claimed[id] = true
		}
	}
	var cited []string
	seen := map[string]bool{}
	for _, id := range in.Citations {
		if !seen[id] {
			seen[id] = true
			cited = append(cited, id)
		}
	}
	for _, m := range citationMarker.FindAllStringSubmatch(in.Answer, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			cited = append(cited, m[1])
		}
	}
	if len(cited) == 0 {
		return ValidationOutput{SendBackTo: BackToSynthesis,
			Rationale: "the answer cites no passage"}, nil
	}
	for _, id := range cited {
		if !claimed[id] {
			return ValidationOutput{SendBackTo: BackToSynthesis,
				Rationale: fmt.Sprintf("the answer cites %s, which none of the %d claims cites", id, len(in.Claims))}, nil
		}
	}
	q := termSet(in.Question)
	text := in.Answer
	for _, c := range in.Claims {
		text += "\n" + c.Text
	}
	covered := shared(q, termSet(text))
	var missing []string
	for t := range q {
		if !contains(covered, t) {
			missing = append(missing, t)
		}
	}
	sort.Strings(missing)
	numbers := fmt.Sprintf("the answer cites %d passage(s), all cited by the claims; it and the %d claims cover %d of the question's %d terms (%s)",
		len(cited), len(in.Claims), len(covered), len(q), strings.Join(covered, ", "))
	if len(missing) > 0 {
		numbers += "; missing: " + strings.Join(missing, ", ")
	}
	if 2*len(covered) < len(q) {
		return ValidationOutput{SendBackTo: BackToResearch,
			Rationale: "fewer than half of the question's terms are covered: " + numbers}, nil
	}
	return ValidationOutput{Valid: true, Rationale: numbers}, nil
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
