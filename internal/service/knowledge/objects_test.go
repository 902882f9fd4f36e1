package knowledge_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestKnowledge: the knowledge store of ADR-007 (knowledge.Service): objects
// with a status and an append-only transition log, edges, and the claim
// discipline of pipeline steps, on both backends.
func TestKnowledge(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"KnowledgeCanonicalJSON":            testKnowledgeCanonicalJSON,
		"KnowledgeCanonicalContent":         testKnowledgeCanonicalContent,
		"KnowledgeValidate":                 testKnowledgeValidate,
		"ObjectCreateAndGet":                testObjectCreateAndGet,
		"ObjectContentHash":                 testObjectContentHash,
		"ObjectBadInput":                    testObjectBadInput,
		"ObjectNotFound":                    testObjectNotFound,
		"ObjectList":                        testObjectList,
		"ObjectClaim":                       testObjectClaim,
		"ObjectClaimBadInput":               testObjectClaimBadInput,
		"ObjectClaimExactlyOnce":            testObjectClaimExactlyOnce,
		"ObjectClaimOne":                    testObjectClaimOne,
		"ObjectClaimTokenOnlyForTheClaimer": testObjectClaimTokenOnlyForTheClaimer,
		"ObjectTransition":                  testObjectTransition,
		"ObjectTransitionSameStatus":        testObjectTransitionSameStatus,
		"ObjectTransitionErrors":            testObjectTransitionErrors,
		"ObjectTouchAndReleaseClaim":        testObjectTouchAndReleaseClaim,
		"ObjectReleaseStaleClaims":          testObjectReleaseStaleClaims,
		"ObjectAddEdges":                    testObjectAddEdges,
		"KnowledgeTopicPublished":           testKnowledgeTopicPublished,
	})
}

// knowledgeStore opens a handle on open's database whose clock is a fake at
// T0 and returns its knowledge store.
func knowledgeStore(t testing.TB, open backendtest.Opener) (*knowledge.Service, *clock.Fake) {
	t.Helper()
	s, clk := backendtest.FakeStore(t, open)
	return s.Objects, clk
}

// canonical returns the canonical encoding of content and its hash, computed
// independently of the store package.
func canonical(t testing.TB, content string) (string, string) {
	t.Helper()
	c, err := cks.CanonicalJSON([]byte(content))
	if err != nil {
		t.Fatalf("CanonicalJSON(%s): %v", content, err)
	}
	sum := sha256.Sum256(c)
	return string(c), hex.EncodeToString(sum[:])
}

// wantContent fails the test unless o holds content (in any encoding of the
// same canonical form) and its hash.
func wantContent(t testing.TB, what string, o cks.Object, content string) {
	t.Helper()
	want, hash := canonical(t, content)
	got, err := cks.CanonicalJSON(o.Content)
	if err != nil || string(got) != want || o.ContentHash != hash {
		t.Fatalf("%s: content %s (canonical %s, %v), hash %s; want %s, hash %s", what, o.Content, got, err, o.ContentHash, want, hash)
	}
}

// mustClaimObjects claims up to n objects of status for worker and fails the
// test unless it got exactly want of them.
func mustClaimObjects(t testing.TB, k *knowledge.Service, status, worker string, n, want int) []cks.Object {
	t.Helper()
	os, err := k.ClaimObjects(ctx(t), status, worker, n)
	if err != nil {
		t.Fatalf("ClaimObjects(%s, %s, %d): %v", status, worker, n, err)
	}
	if len(os) != want {
		t.Fatalf("ClaimObjects(%s, %s, %d) claimed %d objects %v, want %d", status, worker, n, len(os), objectIDs(os), want)
	}
	return os
}

func objectIDs(os []cks.Object) []int64 {
	ids := make([]int64, len(os))
	for i, o := range os {
		ids[i] = o.ID
	}
	return ids
}

func sortedIDs(os []cks.Object) []int64 {
	ids := objectIDs(os)
	slices.Sort(ids)
	return ids
}

// wantUnchanged fails the test unless the store holds exactly the objects,
// logs, edges and claims of before.
func wantUnchanged(t testing.TB, what string, k *knowledge.Service, before map[int64]string) {
	t.Helper()
	after := backendtest.ObjectSnapshot(t, k)
	if len(after) != len(before) {
		t.Errorf("%s: %d objects, want %d (nothing written)", what, len(after), len(before))
	}
	for id, b := range before {
		if a := after[id]; a != b {
			t.Errorf("%s changed object %d:\n got: %s\nwant: %s", what, id, a, b)
		}
	}
}

// wantFieldError fails the test unless err is a FieldError naming field.
func wantFieldError(t testing.TB, what string, err error, field string) {
	t.Helper()
	var fe *cks.FieldError
	if !errors.Is(err, cks.ErrInvalid) || !errors.As(err, &fe) || fe.Field != field {
		t.Errorf("%s: err = %v, want a FieldError naming %s", what, err, field)
	}
}

// edgeKey describes an edge without its id and time, for set comparisons.
func edgeKey(src, dst int64, base, semantic string, w *float64) string {
	ws := "-"
	if w != nil {
		ws = fmt.Sprint(*w)
	}
	return fmt.Sprintf("%d>%d %s/%s w=%s", src, dst, base, semantic, ws)
}

func edgeKeys(es []knowledge.NewEdge) []string {
	var keys []string
	for _, e := range es {
		keys = append(keys, edgeKey(e.Src, e.Dst, e.BaseType, e.SemanticType, e.Weight))
	}
	return keys
}

// wantEdges fails the test unless o's edges are exactly want (in any order),
// each with an id and created at at.
func wantEdges(t testing.TB, o cks.Object, at time.Time, want ...string) {
	t.Helper()
	var got []string
	ids := map[int64]bool{}
	for _, e := range o.Edges {
		got = append(got, edgeKey(e.Src, e.Dst, e.BaseType, e.SemanticType, e.Weight))
		if e.ID <= 0 || ids[e.ID] || !e.CreatedAt.Equal(at) {
			t.Errorf("object %d: edge %+v: want a distinct id and created_at %v", o.ID, e, at)
		}
		ids[e.ID] = true
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("object %d edges:\n got %q\nwant %q", o.ID, got, want)
	}
}

// wantEntry fails the test unless e is the log entry want (Seq ignored;
// ReasoningNodeID compared only when checkReasoning).
func wantEntry(t testing.TB, what string, e, want cks.TransitionEntry, checkReasoning bool) {
	t.Helper()
	ok := e.Seq > 0 && e.ObjectID == want.ObjectID && e.TS.Equal(want.TS) && e.Agent == want.Agent &&
		e.Action == want.Action && e.TransitionedTo == want.TransitionedTo &&
		e.ContentHash == want.ContentHash && e.Round == want.Round
	if checkReasoning {
		switch {
		case (e.ReasoningNodeID == nil) != (want.ReasoningNodeID == nil):
			ok = false
		case e.ReasoningNodeID != nil && *e.ReasoningNodeID != *want.ReasoningNodeID:
			ok = false
		}
	}
	if !ok {
		t.Fatalf("%s: log entry\n got %s\nwant %s (any seq > 0)", what, backendtest.AsJSON(t, e), backendtest.AsJSON(t, want))
	}
}

// wantUnclaimed fails the test when o holds a claim.
func wantUnclaimed(t testing.TB, what string, o cks.Object) {
	t.Helper()
	if o.ClaimedBy != "" || o.ClaimToken != "" || !o.ClaimedAt.IsZero() {
		t.Fatalf("%s: object %d still claimed: by %q token %q at %v", what, o.ID, o.ClaimedBy, o.ClaimToken, o.ClaimedAt)
	}
}

func testKnowledgeCanonicalJSON(t *testing.T, _ backendtest.Opener) {
	cases := []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{" {\n \"b\" : 1 ,\t\"a\" : 2 } \n", `{"a":2,"b":1}`},
		// Nested objects are sorted too; arrays keep their order.
		{`{"z":{"y":[3,1,{"d":1,"c":[2,1]}],"x":null},"a":[]}`, `{"a":[],"z":{"x":null,"y":[3,1,{"c":[2,1],"d":1}]}}`},
		{`[ {"b":true,"a":false}, "s", 2 ]`, `[{"a":false,"b":true},"s",2]`},
		// Numbers keep their literal text.
		{`{"n":1.0,"e":1e3,"E":2.50E-3,"z":-0,"big":123456789012345678901234567890,"f":0.1}`,
			`{"E":2.50E-3,"big":123456789012345678901234567890,"e":1e3,"f":0.1,"n":1.0,"z":-0}`},
		// Unicode and HTML characters are not escaped; keys sort by bytes.
		{`{"s":"<a href=\"x\">&amp; é 😀 日本</a>","é":1,"Z":2,"a":3}`,
			`{"Z":2,"a":3,"s":"<a href=\"x\">&amp; é 😀 日本</a>","é":1}`},
		{`{"s":"\u00e9\u003c"}`, `{"s":"é<"}`},
		{`"x"`, `"x"`},
		{`1.50`, `1.50`},
		{`{}`, `{}`},
	}
	for _, c := range cases {
		got, err := cks.CanonicalJSON([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("CanonicalJSON(%s) = %s, %v; want %s", c.in, got, err, c.want)
			continue
		}
		// Canonical form is a fixed point.
		if again, err := cks.CanonicalJSON(got); err != nil || string(again) != c.want {
			t.Errorf("CanonicalJSON(CanonicalJSON(%s)) = %s, %v", c.in, again, err)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":1} {"b":2}`, `{"a":1}x`, `{"a":1}]`, `{"a":1}}`, `{a:1}`, `[1,]`} {
		if got, err := cks.CanonicalJSON([]byte(bad)); err == nil {
			t.Errorf("CanonicalJSON(%q) = %s, want an error", bad, got)
		}
	}
}

func testKnowledgeCanonicalContent(t *testing.T, _ backendtest.Opener) {
	emptySum := sha256.Sum256([]byte(`{}`))
	emptyHash := hex.EncodeToString(emptySum[:])
	for _, in := range []string{``, ` `, "\n\t", `{}`, ` { } `} {
		c, h, err := knowledge.CanonicalContent(json.RawMessage(in), "content")
		if err != nil || string(c) != `{}` || h != emptyHash {
			t.Errorf("CanonicalContent(%q) = %s, %s, %v; want {} and %s", in, c, h, err, emptyHash)
		}
	}
	a, ha, err := knowledge.CanonicalContent(json.RawMessage(`{"b": [1, 2.0], "a": {"y": 1, "x": "<é>"}}`), "content")
	if err != nil {
		t.Fatal(err)
	}
	b, hb, err := knowledge.CanonicalContent(json.RawMessage(`{"a":{"x":"<é>","y":1},"b":[1,2.0]}`), "content")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(`{"a":{"x":"<é>","y":1},"b":[1,2.0]}`))
	if string(a) != `{"a":{"x":"<é>","y":1},"b":[1,2.0]}` || string(a) != string(b) || ha != hb || ha != hex.EncodeToString(sum[:]) {
		t.Errorf("same value, two spellings: %s %s / %s %s", a, ha, b, hb)
	}
	for _, other := range []string{`{"a":{"x":"<é>","y":1},"b":[2.0,1]}`, `{"a":{"x":"<é>","y":1},"b":[1,2]}`} {
		if _, h, err := knowledge.CanonicalContent(json.RawMessage(other), "content"); err != nil || h == ha {
			t.Errorf("CanonicalContent(%s): hash %s, %v; want a different hash than %s", other, h, err, ha)
		}
	}
	big := `{"a":"` + strings.Repeat("x", cks.MaxJSONBytes) + `"}`
	fits := `{"a":"` + strings.Repeat("x", cks.MaxJSONBytes-8) + `"}`
	if c, _, err := knowledge.CanonicalContent(json.RawMessage(fits), "content"); err != nil || len(c) != cks.MaxJSONBytes {
		t.Errorf("content of exactly MaxObjectContent bytes: %d bytes, %v", len(c), err)
	}
	for _, bad := range []string{`[1]`, `"x"`, `1`, `null`, `true`, `{`, `{"a":1} {}`, `{"a":1}]`, big} {
		_, _, err := knowledge.CanonicalContent(json.RawMessage(bad), "attach[2].object.content")
		show := bad
		if len(show) > 40 {
			show = show[:40] + "…"
		}
		wantFieldError(t, fmt.Sprintf("CanonicalContent(%s)", show), err, "attach[2].object.content")
	}
}

// testKnowledgeValidate: the Validate methods name the first bad field as
// the backends report it, and canonicalise contents.
func testKnowledgeValidate(t *testing.T, _ backendtest.Opener) {
	n, err := knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"b":1, "a":2}`)}.Validate("attach[0].object.")
	if err != nil || string(n.Content) != `{"a":2,"b":1}` {
		t.Errorf("NewObject.Validate: %s, %v", n.Content, err)
	}
	if n, err := (knowledge.NewObject{Kind: "claim"}).Validate(""); err != nil || string(n.Content) != `{}` {
		t.Errorf("NewObject.Validate default content: %s, %v", n.Content, err)
	}
	objs := []struct {
		field string
		n     knowledge.NewObject
	}{
		{"p.kind", knowledge.NewObject{}},
		{"p.kind", knowledge.NewObject{Kind: "Claim"}},
		{"p.kind", knowledge.NewObject{Kind: strings.Repeat("k", knowledge.MaxKindLen+1)}},
		{"p.status", knowledge.NewObject{Kind: "claim", Status: "awaiting-critique"}},
		{"p.title", knowledge.NewObject{Kind: "claim", Title: strings.Repeat("t", 1001)}},
		{"p.content", knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`[]`)}},
	}
	for _, c := range objs {
		_, err := c.n.Validate("p.")
		wantFieldError(t, fmt.Sprintf("NewObject.Validate(%.60v)", c.n), err, c.field)
	}

	w := func(v float64) *float64 { return &v }
	good := func() knowledge.ObjectTransition {
		return knowledge.ObjectTransition{From: "a", To: "b", Action: "completed", Agent: "critic",
			Content: json.RawMessage(`{"y":1,"x":2}`), Reasoning: 0,
			Attach: []knowledge.Attachment{{Object: knowledge.NewObject{Kind: "critique"}, BaseType: "depends_on",
				SemanticType: "critiques", Weight: w(-1), Links: []knowledge.LinkFrom{{Dst: 1, BaseType: "depends_on", Weight: w(1)}}}},
			Edges:     []knowledge.NewEdge{{Src: 1, Dst: 2, BaseType: "depends_on", SemanticType: "supports", Weight: w(0)}},
			SetStatus: []knowledge.StatusChange{{ObjectID: 2, Status: "disputed", Action: "disputed"}},
		}
	}
	v, err := good().Validate()
	if err != nil || string(v.Content) != `{"x":2,"y":1}` || string(v.Attach[0].Object.Content) != `{}` {
		t.Errorf("ObjectTransition.Validate(good) = %+v, %v", v, err)
	}
	cases := []struct {
		field string
		edit  func(*knowledge.ObjectTransition)
	}{
		{"from", func(x *knowledge.ObjectTransition) { x.From = "" }},
		{"to", func(x *knowledge.ObjectTransition) { x.To = "B" }},
		{"action", func(x *knowledge.ObjectTransition) { x.Action = "" }},
		{"agent", func(x *knowledge.ObjectTransition) { x.Agent = " " }},
		{"content", func(x *knowledge.ObjectTransition) { x.Content = json.RawMessage(`[1]`) }},
		{"reasoning", func(x *knowledge.ObjectTransition) { x.Reasoning = 1 }},
		{"reasoning", func(x *knowledge.ObjectTransition) { x.Reasoning = -2 }},
		{"attach[0].object.kind", func(x *knowledge.ObjectTransition) { x.Attach[0].Object.Kind = "" }},
		{"attach[0].object.content", func(x *knowledge.ObjectTransition) { x.Attach[0].Object.Content = json.RawMessage(`"x"`) }},
		{"attach[0].base_type", func(x *knowledge.ObjectTransition) { x.Attach[0].BaseType = "" }},
		{"attach[0].semantic_type", func(x *knowledge.ObjectTransition) { x.Attach[0].SemanticType = "Refutes" }},
		{"attach[0].weight", func(x *knowledge.ObjectTransition) { x.Attach[0].Weight = w(2) }},
		{"attach[0].weight", func(x *knowledge.ObjectTransition) { x.Attach[0].Weight = w(math.NaN()) }},
		{"attach[0].links[0].dst", func(x *knowledge.ObjectTransition) { x.Attach[0].Links[0].Dst = 0 }},
		{"attach[0].links[0].base_type", func(x *knowledge.ObjectTransition) { x.Attach[0].Links[0].BaseType = "" }},
		{"attach[0].links[0].weight", func(x *knowledge.ObjectTransition) { x.Attach[0].Links[0].Weight = w(-1.01) }},
		{"edges[0].src", func(x *knowledge.ObjectTransition) { x.Edges[0].Src = 0 }},
		{"edges[0].dst", func(x *knowledge.ObjectTransition) { x.Edges[0].Dst = -1 }},
		{"edges[0].base_type", func(x *knowledge.ObjectTransition) { x.Edges[0].BaseType = "depends on" }},
		{"edges[0].weight", func(x *knowledge.ObjectTransition) { x.Edges[0].Weight = w(math.Inf(1)) }},
		{"set_status[0].object_id", func(x *knowledge.ObjectTransition) { x.SetStatus[0].ObjectID = 0 }},
		{"set_status[0].status", func(x *knowledge.ObjectTransition) { x.SetStatus[0].Status = "" }},
		{"set_status[0].action", func(x *knowledge.ObjectTransition) { x.SetStatus[0].Action = "Disputed" }},
	}
	for _, c := range cases {
		x := good()
		c.edit(&x)
		_, err := x.Validate()
		wantFieldError(t, "ObjectTransition.Validate with bad "+c.field, err, c.field)
	}

	f, err := cks.ObjectFilter{}.Validate()
	if err != nil || f.Limit != cks.DefaultListLimit {
		t.Errorf("ObjectFilter{}.Validate() = %+v, %v; want limit %d", f, err, cks.DefaultListLimit)
	}
}

func testObjectCreateAndGet(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	// A pipeline object: its creation is the first log entry.
	q := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Title: "Why?",
		Content: json.RawMessage(`{ "text": "why <é>?", "n": 1.0 }`), Status: "awaiting_research", CreatedBy: "operator"})
	clk.Advance(time.Minute)
	// A reasoning node: no status, no log; content {} by default.
	r := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "critique"})
	if r.ID <= q.ID {
		t.Fatalf("ids %d then %d, want increasing", q.ID, r.ID)
	}
	for _, c := range []struct {
		o                   cks.Object
		kind, title, status string
		by, content         string
		at                  time.Time
	}{
		{q, "question", "Why?", "awaiting_research", "operator", `{"n":1.0,"text":"why <é>?"}`, backendtest.T0},
		{r, "critique", "", "", "", `{}`, backendtest.T0.Add(time.Minute)},
	} {
		for i, o := range []cks.Object{c.o, backendtest.MustGetObject(t, k, c.o.ID)} {
			what := fmt.Sprintf("object %d (%s)", o.ID, []string{"as created", "as read"}[i])
			if o.ID != c.o.ID || o.Kind != c.kind || o.Title != c.title || o.Status != c.status ||
				o.CreatedBy != c.by || o.Round != 0 || !o.CreatedAt.Equal(c.at) || !o.UpdatedAt.Equal(c.at) {
				t.Fatalf("%s: %s", what, backendtest.AsJSON(t, o))
			}
			wantContent(t, what, o, c.content)
			wantUnclaimed(t, what, o)
			if len(o.Edges) != 0 {
				t.Fatalf("%s: edges %+v", what, o.Edges)
			}
		}
	}
	got := backendtest.MustGetObject(t, k, q.ID)
	if len(got.Log) != 1 {
		t.Fatalf("object with a status: log %s, want one created entry", backendtest.AsJSON(t, got.Log))
	}
	wantEntry(t, "creation entry", got.Log[0], cks.TransitionEntry{ObjectID: q.ID, TS: backendtest.T0, Agent: "operator",
		Action: "created", TransitionedTo: "awaiting_research", ContentHash: q.ContentHash, Round: 0}, true)
	if got := backendtest.MustGetObject(t, k, r.ID); len(got.Log) != 0 {
		t.Fatalf("object without a status has log %s, want none", backendtest.AsJSON(t, got.Log))
	}
	if all := backendtest.AllObjects(t, k); fmt.Sprint(objectIDs(all)) != fmt.Sprint([]int64{q.ID, r.ID}) {
		t.Fatalf("ListObjects: %v", objectIDs(all))
	}
}

// testObjectContentHash: the hash is of the canonical content, so key order
// and spacing do not change it, and any other value does.
func testObjectContentHash(t *testing.T, open backendtest.Opener) {
	k, _ := knowledgeStore(t, open)
	mk := func(content string) cks.Object {
		t.Helper()
		o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(content), Status: "proposed"})
		wantContent(t, "created "+content, o, content)
		got := backendtest.MustGetObject(t, k, o.ID)
		wantContent(t, "read "+content, got, content)
		if got.Log[0].ContentHash != o.ContentHash {
			t.Fatalf("created entry hash %s, object hash %s", got.Log[0].ContentHash, o.ContentHash)
		}
		return got
	}
	a := mk(`{"b":[1,{"d":2,"c":1}],"a":"x","n":1.0,"e":1e3}`)
	b := mk(" {\n  \"n\" : 1.0, \"e\": 1e3, \"a\" : \"x\" ,\n \"b\" : [ 1 , { \"c\" : 1 , \"d\" : 2 } ] }")
	c := mk(`{"b":[1,{"d":2,"c":1}],"a":"x","n":1.0,"e":1e3}`)
	if a.ContentHash != b.ContentHash || a.ContentHash != c.ContentHash {
		t.Fatalf("one value, three spellings: hashes %s %s %s", a.ContentHash, b.ContentHash, c.ContentHash)
	}
	seen := map[string]string{a.ContentHash: "a"}
	for _, other := range []string{
		`{"b":[{"d":2,"c":1},1],"a":"x","n":1.0,"e":1e3}`, // array order matters
		`{"b":[1,{"d":2,"c":1}],"a":"y","n":1.0,"e":1e3}`,
		`{"b":[1,{"d":2,"c":1}],"a":"x","n":1,"e":1e3}`, // literal number text
		`{}`,
	} {
		o := mk(other)
		if prev, dup := seen[o.ContentHash]; dup {
			t.Fatalf("%s has the hash of %s", other, prev)
		}
		seen[o.ContentHash] = other
	}
	d := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim"})
	wantContent(t, "default content", d, `{}`)
	sum := sha256.Sum256([]byte(`{}`))
	if d.ContentHash != hex.EncodeToString(sum[:]) {
		t.Fatalf("hash of {} = %s", d.ContentHash)
	}
}

func testObjectBadInput(t *testing.T, open backendtest.Opener) {
	k, _ := knowledgeStore(t, open)
	backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "awaiting_research"})
	backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: strings.Repeat("k", knowledge.MaxKindLen), Status: strings.Repeat("s", knowledge.MaxKindLen)})
	before := backendtest.ObjectSnapshot(t, k)
	cases := []struct {
		field string
		n     knowledge.NewObject
	}{
		{"kind", knowledge.NewObject{}},
		{"kind", knowledge.NewObject{Kind: "Question"}},
		{"kind", knowledge.NewObject{Kind: "a question"}},
		{"kind", knowledge.NewObject{Kind: "claim-x"}},
		{"kind", knowledge.NewObject{Kind: strings.Repeat("k", knowledge.MaxKindLen+1)}},
		{"status", knowledge.NewObject{Kind: "claim", Status: "Proposed"}},
		{"status", knowledge.NewObject{Kind: "claim", Status: "awaiting critique"}},
		{"status", knowledge.NewObject{Kind: "claim", Status: "awaiting-critique"}},
		{"status", knowledge.NewObject{Kind: "claim", Status: "naïve"}},
		{"status", knowledge.NewObject{Kind: "claim", Status: strings.Repeat("s", knowledge.MaxKindLen+1)}},
		{"title", knowledge.NewObject{Kind: "claim", Title: strings.Repeat("t", 1001)}},
		{"content", knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`[1]`)}},
		{"content", knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`"x"`)}},
		{"content", knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`null`)}},
		{"content", knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"a":`)}},
		{"content", knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"a":1} {"b":2}`)}},
		{"content", knowledge.NewObject{Kind: "claim", Status: "proposed",
			Content: json.RawMessage(`{"a":"` + strings.Repeat("x", cks.MaxJSONBytes) + `"}`)}},
	}
	for _, c := range cases {
		_, err := k.CreateObject(ctx(t), c.n)
		wantFieldError(t, fmt.Sprintf("CreateObject(%.80q)", fmt.Sprintf("%+v", c.n)), err, c.field)
	}
	wantUnchanged(t, "refused CreateObject", k, before)
}

func testObjectNotFound(t *testing.T, open backendtest.Opener) {
	k, _ := knowledgeStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "a"})
	const id = 424242
	tr := knowledge.ObjectTransition{From: "a", To: "b", Action: "completed", Agent: "critic", Reasoning: -1}
	calls := []struct {
		name string
		call func() error
	}{
		{"GetObject", func() error { _, err := k.GetObject(ctx(t), id); return err }},
		{"TouchClaim", func() error { return k.TouchClaim(ctx(t), id, "tok") }},
		{"ReleaseClaim", func() error { return k.ReleaseClaim(ctx(t), id, "tok") }},
		{"Transition", func() error { _, _, err := k.TransitionObject(ctx(t), id, "tok", tr); return err }},
	}
	for _, c := range calls {
		err := c.call()
		if !errors.Is(err, cks.ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprint(id)) {
			t.Errorf("%s(%d): err = %v, want ErrNotFound naming the id", c.name, id, err)
		}
	}
	if got := backendtest.MustGetObject(t, k, o.ID); got.Status != "a" || len(got.Log) != 1 {
		t.Fatalf("calls on a missing id changed object %d: %s", o.ID, backendtest.AsJSON(t, got))
	}
}

func testObjectList(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	mk := func(kind, status string) int64 {
		t.Helper()
		clk.Advance(time.Second)
		return backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: kind, Status: status, Title: kind + " " + status}).ID
	}
	q1 := mk("question", "awaiting_research")
	c1 := mk("claim", "supported")
	q2 := mk("question", "awaiting_critique")
	r1 := mk("critique", "")
	c2 := mk("claim", "disputed")
	q3 := mk("question", "awaiting_research")
	ids := func(v ...int64) string { return fmt.Sprint(v) }
	cases := []struct {
		name string
		f    cks.ObjectFilter
		want string
	}{
		{"all", cks.ObjectFilter{}, ids(q1, c1, q2, r1, c2, q3)},
		{"kind", cks.ObjectFilter{Kinds: []string{"claim"}}, ids(c1, c2)},
		{"kinds", cks.ObjectFilter{Kinds: []string{"critique", "question"}}, ids(q1, q2, r1, q3)},
		{"status", cks.ObjectFilter{Statuses: []string{"awaiting_research"}}, ids(q1, q3)},
		{"statuses", cks.ObjectFilter{Statuses: []string{"disputed", "awaiting_critique"}}, ids(q2, c2)},
		{"kind and statuses", cks.ObjectFilter{Kinds: []string{"question"}, Statuses: []string{"awaiting_research", "supported"}}, ids(q1, q3)},
		{"no match", cks.ObjectFilter{Kinds: []string{"claim"}, Statuses: []string{"awaiting_research"}}, ids()},
		{"unknown status", cks.ObjectFilter{Statuses: []string{"nope"}}, ids()},
		{"after", cks.ObjectFilter{After: q2}, ids(r1, c2, q3)},
		{"after with filter", cks.ObjectFilter{After: q1, Statuses: []string{"awaiting_research"}}, ids(q3)},
		{"after the last", cks.ObjectFilter{After: q3}, ids()},
		{"max limit", cks.ObjectFilter{Limit: cks.MaxListLimit}, ids(q1, c1, q2, r1, c2, q3)},
	}
	// Unclaimed leaves out what a worker holds.
	mustClaimObjects(t, k, "awaiting_research", "w", 1, 1) // q1, the oldest
	cases = append(cases, struct {
		name string
		f    cks.ObjectFilter
		want string
	}{"unclaimed", cks.ObjectFilter{Statuses: []string{"awaiting_research"}, Unclaimed: true}, ids(q3)},
		struct {
			name string
			f    cks.ObjectFilter
			want string
		}{"claimed too", cks.ObjectFilter{Statuses: []string{"awaiting_research"}}, ids(q1, q3)})
	for _, c := range cases {
		page, err := k.ListObjects(ctx(t), c.f)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := fmt.Sprint(objectIDs(page.Objects)); got != c.want || page.Next != 0 {
			t.Errorf("%s: ListObjects(%+v) = %s next %d, want %s next 0", c.name, c.f, got, page.Next, c.want)
		}
	}
	// Listed objects are the objects, without log and edges.
	page, err := k.ListObjects(ctx(t), cks.ObjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range page.Objects {
		full := backendtest.MustGetObject(t, k, o.ID)
		full.Log, full.Edges = nil, nil
		if len(o.Log) != 0 || len(o.Edges) != 0 || backendtest.AsJSON(t, o) != backendtest.AsJSON(t, full) {
			t.Fatalf("listed %s\n  read %s", backendtest.AsJSON(t, o), backendtest.AsJSON(t, full))
		}
	}
	// Paging follows the cursor, each page at most Limit objects.
	paging := []struct {
		f     cks.ObjectFilter
		want  string
		pages int
	}{
		{cks.ObjectFilter{Limit: 4}, ids(q1, c1, q2, r1, c2, q3), 2},
		{cks.ObjectFilter{Limit: 1, Kinds: []string{"question"}}, ids(q1, q2, q3), 3},
		{cks.ObjectFilter{Limit: 2, Kinds: []string{"question"}}, ids(q1, q2, q3), 2},
	}
	for _, p := range paging {
		var got []int64
		f, pages := p.f, 0
		for {
			page, err := k.ListObjects(ctx(t), f)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Objects) > p.f.Limit {
				t.Fatalf("%+v: page of %d objects", f, len(page.Objects))
			}
			got = append(got, objectIDs(page.Objects)...)
			if len(page.Objects) > 0 {
				pages++
			}
			if page.Next == 0 {
				break
			}
			if page.Next <= f.After || pages > 10 {
				t.Fatalf("%+v: next cursor %d", f, page.Next)
			}
			f.After = page.Next
		}
		if fmt.Sprint(got) != p.want || (pages != p.pages && pages != p.pages+1) {
			t.Errorf("paging %+v: %v in %d pages, want %s in %d", p.f, got, pages, p.want, p.pages)
		}
	}
	// The default limit.
	for range cks.DefaultListLimit {
		backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "filler"})
	}
	page, err = k.ListObjects(ctx(t), cks.ObjectFilter{})
	if err != nil || len(page.Objects) != cks.DefaultListLimit || page.Next == 0 {
		t.Fatalf("default limit: %d objects, next %d, %v; want %d and a cursor", len(page.Objects), page.Next, err, cks.DefaultListLimit)
	}
	bad := []struct {
		field string
		f     cks.ObjectFilter
	}{
		{"limit", cks.ObjectFilter{Limit: -1}},
		{"limit", cks.ObjectFilter{Limit: cks.MaxListLimit + 1}},
		{"cursor", cks.ObjectFilter{After: -1}},
	}
	for _, c := range bad {
		_, err := k.ListObjects(ctx(t), c.f)
		wantFieldError(t, fmt.Sprintf("ListObjects(%+v)", c.f), err, c.field)
	}
}

func testObjectClaim(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	var todo []int64
	for i := range 5 {
		todo = append(todo, backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "awaiting_critique", Title: fmt.Sprint(i)}).ID)
		// Objects of another status or none are never claimed for this one.
		backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "awaiting_synthesis"})
		backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "critique"})
	}
	mustClaimObjects(t, k, "nothing_has_this", "w1", 10, 0)
	tokens := map[string]bool{}
	check := func(os []cks.Object, worker string, at time.Time) {
		t.Helper()
		for _, o := range os {
			if o.Status != "awaiting_critique" || o.ClaimedBy != worker || o.ClaimToken == "" || !o.ClaimedAt.Equal(at) {
				t.Fatalf("claimed object %s, want claimed_by %s at %v with a token", backendtest.AsJSON(t, o), worker, at)
			}
			if tokens[o.ClaimToken] {
				t.Fatalf("claim token %q handed out twice", o.ClaimToken)
			}
			tokens[o.ClaimToken] = true
			// A read shows who holds the claim and since when, never the
			// token: only the claim's answer carries it.
			got := backendtest.MustGetObject(t, k, o.ID)
			if got.ClaimedBy != worker || got.ClaimToken != "" || !got.ClaimedAt.Equal(at) || got.Status != "awaiting_critique" {
				t.Fatalf("read back claimed object %s, claimed as %s", backendtest.AsJSON(t, got), backendtest.AsJSON(t, o))
			}
		}
	}
	clk.Advance(time.Minute)
	first := mustClaimObjects(t, k, "awaiting_critique", "critic-1", 2, 2)
	if got := fmt.Sprint(sortedIDs(first)); got != fmt.Sprint(todo[:2]) {
		t.Fatalf("first claim got %s, want the oldest %v", got, todo[:2])
	}
	check(first, "critic-1", backendtest.T0.Add(time.Minute))
	clk.Advance(time.Minute)
	rest := mustClaimObjects(t, k, "awaiting_critique", "critic-2", cks.MaxListLimit, 3)
	if got := fmt.Sprint(sortedIDs(rest)); got != fmt.Sprint(todo[2:]) {
		t.Fatalf("second claim got %s, want the rest %v", got, todo[2:])
	}
	check(rest, "critic-2", backendtest.T0.Add(2*time.Minute))
	mustClaimObjects(t, k, "awaiting_critique", "critic-3", 5, 0)
	// The first claims are kept: held by their claimer since their claim,
	// and their tokens still fence (checked last, a touch renews).
	if got := backendtest.MustGetObject(t, k, first[0].ID); got.ClaimedBy != "critic-1" || got.ClaimToken != "" || !got.ClaimedAt.Equal(backendtest.T0.Add(time.Minute)) {
		t.Fatalf("first claim reads %s, want held by critic-1 since %v", backendtest.AsJSON(t, got), backendtest.T0.Add(time.Minute))
	}
	defer func() {
		for _, o := range first {
			if err := k.TouchClaim(ctx(t), o.ID, o.ClaimToken); err != nil {
				t.Errorf("first claim of object %d after the others: %v", o.ID, err)
			}
		}
	}()
	// The other status is claimable on its own.
	other := mustClaimObjects(t, k, "awaiting_synthesis", "synth", 10, 5)
	for _, o := range other {
		if o.Status != "awaiting_synthesis" || o.ClaimedBy != "synth" {
			t.Fatalf("claimed %s", backendtest.AsJSON(t, o))
		}
	}
}

func testObjectClaimBadInput(t *testing.T, open backendtest.Opener) {
	k, _ := knowledgeStore(t, open)
	backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "awaiting_critique"})
	backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "critique"})
	before := backendtest.ObjectSnapshot(t, k)
	cases := []struct {
		field, status, worker string
		n                     int
	}{
		{"worker", "awaiting_critique", "", 1},
		{"n", "awaiting_critique", "w", 0},
		{"n", "awaiting_critique", "w", -1},
		{"n", "awaiting_critique", "w", cks.MaxListLimit + 1},
	}
	for _, c := range cases {
		_, err := k.ClaimObjects(ctx(t), c.status, c.worker, c.n)
		wantFieldError(t, fmt.Sprintf("ClaimObjects(%q, %q, %d)", c.status, c.worker, c.n), err, c.field)
	}
	// Objects without a status are in no pipeline: an empty status claims
	// nothing (or is refused as a bad status).
	got, err := k.ClaimObjects(ctx(t), "", "w", 10)
	if err != nil && !cks.IsFieldError(err, "status") || len(got) != 0 {
		t.Errorf("ClaimObjects(\"\") = %v, %v; want nothing claimed (or a FieldError naming status)", objectIDs(got), err)
	}
	wantUnchanged(t, "refused claims", k, before)
}

// testObjectClaimOne: ClaimObject claims one given object when it is
// unclaimed and of one of the statuses.
func testObjectClaimOne(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "awaiting_research", CreatedBy: "op"})
	other := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "resolved"})
	clk.Advance(time.Minute)
	before := backendtest.ObjectSnapshot(t, k)
	if _, err := k.ClaimObject(ctx(t), o.ID, "", []string{"awaiting_research"}); !cks.IsFieldError(err, "worker") {
		t.Errorf("ClaimObject with no worker: err = %v, want a FieldError naming worker", err)
	}
	const missing = 424242
	if _, err := k.ClaimObject(ctx(t), missing, "w", []string{"awaiting_research"}); !errors.Is(err, cks.ErrNotFound) ||
		!strings.Contains(err.Error(), fmt.Sprint(missing)) {
		t.Errorf("ClaimObject(missing): err = %v, want ErrNotFound naming %d", err, missing)
	}
	_, err := k.ClaimObject(ctx(t), other.ID, "w", []string{"awaiting_research", "needs_research"})
	if !errors.Is(err, cks.ErrConflict) || errors.Is(err, cks.ErrLeaseLost) || !strings.Contains(err.Error(), "resolved") {
		t.Errorf("ClaimObject of another status: err = %v, want ErrConflict naming the status resolved", err)
	}
	wantUnchanged(t, "refused ClaimObject", k, before)
	got, err := k.ClaimObject(ctx(t), o.ID, "researcher-1", []string{"needs_research", "awaiting_research"})
	if err != nil {
		t.Fatalf("ClaimObject: %v", err)
	}
	if got.ID != o.ID || got.ClaimedBy != "researcher-1" || got.ClaimToken == "" || !got.ClaimedAt.Equal(clk.Now()) || got.Status != "awaiting_research" {
		t.Fatalf("ClaimObject = %s", backendtest.AsJSON(t, got))
	}
	read := backendtest.MustGetObject(t, k, o.ID)
	if read.ClaimToken != "" || read.ClaimedBy != "researcher-1" || !read.ClaimedAt.Equal(clk.Now()) || len(read.Log) != 1 {
		t.Fatalf("claimed object reads %s, want the holder and no token", backendtest.AsJSON(t, read))
	}
	_, err = k.ClaimObject(ctx(t), o.ID, "researcher-2", []string{"awaiting_research"})
	if !errors.Is(err, cks.ErrConflict) || !strings.Contains(err.Error(), "researcher-1") {
		t.Errorf("ClaimObject of a claimed object: err = %v, want ErrConflict naming the holder researcher-1", err)
	}
	mustClaimObjects(t, k, "awaiting_research", "researcher-3", 10, 0)
	if _, _, err := k.TransitionObject(ctx(t), o.ID, got.ClaimToken, knowledge.ObjectTransition{From: "awaiting_research",
		To: "awaiting_critique", Action: "completed", Agent: "researcher", Reasoning: -1}); err != nil {
		t.Fatalf("transition with the ClaimObject token: %v", err)
	}
}

// testObjectClaimTokenOnlyForTheClaimer: a claim token is in the answer of
// the claim that made it and in no read (GetObject, ListObjects, the answer
// of a transition); a token fences its own object only, and the token's
// SHA-256 (what a store may keep of it) is no token.
func testObjectClaimTokenOnlyForTheClaimer(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	a := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "todo"})
	b := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "todo"})
	clk.Advance(time.Minute)
	ca := mustClaimObjects(t, k, "todo", "w1", 1, 1)[0]
	cb, err := k.ClaimObject(ctx(t), b.ID, "w2", []string{"todo"})
	if err != nil {
		t.Fatal(err)
	}
	if ca.ID != a.ID || ca.ClaimToken == "" || cb.ClaimToken == "" || ca.ClaimToken == cb.ClaimToken {
		t.Fatalf("claims %s and %s, want a token each", backendtest.AsJSON(t, ca), backendtest.AsJSON(t, cb))
	}
	page, err := k.ListObjects(ctx(t), cks.ObjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range append(page.Objects, backendtest.MustGetObject(t, k, a.ID), backendtest.MustGetObject(t, k, b.ID)) {
		if o.ClaimToken != "" || o.ClaimedBy == "" || !o.ClaimedAt.Equal(clk.Now()) {
			t.Fatalf("read of a claimed object %s: want its holder and claim time, no token", backendtest.AsJSON(t, o))
		}
	}
	before := backendtest.ObjectSnapshot(t, k)
	sum := sha256.Sum256([]byte(ca.ClaimToken))
	for _, tok := range []string{cb.ClaimToken, hex.EncodeToString(sum[:]), strings.ToUpper(ca.ClaimToken), ca.ClaimToken + " "} {
		backendtest.WantErr(t, fmt.Sprintf("TouchClaim(%d) with %q", a.ID, tok), k.TouchClaim(ctx(t), a.ID, tok), cks.ErrLeaseLost)
	}
	wantUnchanged(t, "refused touches", k, before)
	got, _, err := k.TransitionObject(ctx(t), a.ID, ca.ClaimToken, knowledge.ObjectTransition{From: "todo", To: "done",
		Action: "completed", Agent: "w1", Reasoning: -1})
	if err != nil || got.ClaimToken != "" {
		t.Fatalf("transition = %s, %v; want no token in its answer", backendtest.AsJSON(t, got), err)
	}
	if err := k.TouchClaim(ctx(t), b.ID, cb.ClaimToken); err != nil {
		t.Fatalf("the other claim after a transition: %v", err)
	}
}

// testObjectClaimExactlyOnce: workers on separate handles claim and
// transition objects concurrently; each object is claimed exactly once and
// all end in the next status.
func testObjectClaimExactlyOnce(t *testing.T, open backendtest.Opener) {
	const objects, workers = 300, 8
	clk := clock.NewFake(backendtest.T0)
	seed := open(t, driver.WithClock(clk))
	for i := range objects {
		backendtest.MustCreateObject(t, seed.Objects, knowledge.NewObject{Kind: "question", Status: "todo", Title: fmt.Sprint(i), CreatedBy: "seed"})
	}
	handles := make([]*knowledge.Service, workers)
	for w := range handles {
		handles[w] = open(t, driver.WithClock(clk)).Objects
	}
	var (
		mu      sync.Mutex
		claims  = map[int64][]string{}
		done    = map[int64]int{}
		errs    []error
		wg      sync.WaitGroup
		claimed int
	)
	c := ctx(t)
	for w, k := range handles {
		name := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			fail := func(err error) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				mu.Unlock()
			}
			for {
				os, err := k.ClaimObjects(c, "todo", name, 1+rng.IntN(5))
				if err != nil {
					fail(fmt.Errorf("claim: %w", err))
					return
				}
				if len(os) == 0 {
					return
				}
				mu.Lock()
				for _, o := range os {
					claims[o.ID] = append(claims[o.ID], name)
					claimed++
				}
				mu.Unlock()
				for _, o := range os {
					if o.Status != "todo" || o.ClaimedBy != name || o.ClaimToken == "" {
						fail(fmt.Errorf("claimed %+v", o))
						return
					}
					_, _, err := k.TransitionObject(c, o.ID, o.ClaimToken, knowledge.ObjectTransition{
						From: "todo", To: "done", Action: "completed", Agent: name, Reasoning: -1})
					if err != nil {
						fail(fmt.Errorf("transition %d: %w", o.ID, err))
						return
					}
					mu.Lock()
					done[o.ID]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	all := backendtest.AllObjects(t, seed.Objects)
	if len(all) != objects || claimed != objects {
		t.Fatalf("%d objects, %d claims; want %d of each", len(all), claimed, objects)
	}
	for _, o := range all {
		if c := claims[o.ID]; len(c) != 1 || done[o.ID] != 1 || o.Status != "done" || o.ClaimedBy != "" {
			t.Errorf("object %d: status %s, claimed by %v, transitioned %d times", o.ID, o.Status, c, done[o.ID])
			continue
		}
		if o.ID%10 == 0 { // the log agrees, on a sample
			got := backendtest.MustGetObject(t, seed.Objects, o.ID)
			if len(got.Log) != 2 || got.Log[1].Agent != claims[o.ID][0] || got.Log[1].TransitionedTo != "done" {
				t.Errorf("object %d log %s, want created and one completion by %s", o.ID, backendtest.AsJSON(t, got.Log), claims[o.ID][0])
			}
		}
	}
}

func testObjectTransition(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	subj := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Title: "q", Content: json.RawMessage(`{"q":"why"}`),
		Status: "awaiting_critique", CreatedBy: "researcher"})
	c1 := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"text":"c1"}`), Status: "supported", CreatedBy: "researcher"})
	c2 := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"text":"c2"}`), CreatedBy: "researcher"})
	clk.Advance(time.Minute)
	claim := mustClaimObjects(t, k, "awaiting_critique", "critic-1", 1, 1)[0]
	clk.Advance(time.Minute)
	now := clk.Now()
	w := func(v float64) *float64 { return &v }
	const newContent = `{ "v": 2, "q": "why", "verdict": {"ok": false, "score": 0.50} }`
	_, newHash := canonical(t, newContent)
	tr := knowledge.ObjectTransition{
		From: "awaiting_critique", To: "awaiting_synthesis", Action: "completed", Agent: "critic",
		Content: json.RawMessage(newContent), NextRound: true,
		Attach: []knowledge.Attachment{
			{Object: knowledge.NewObject{Kind: "critique", Content: json.RawMessage(`{"text": "weak", "a": 1}`), CreatedBy: "critic"},
				BaseType: "depends_on", SemanticType: "critiques", Weight: w(-0.5),
				Links: []knowledge.LinkFrom{{Dst: c1.ID, BaseType: "depends_on", SemanticType: "refutes", Weight: w(0.75)}}},
			{Object: knowledge.NewObject{Kind: "claim", Title: "found", Status: "proposed", CreatedBy: "critic"},
				BaseType: "depends_on", SemanticType: "supports"},
		},
		Reasoning: 0,
		Edges:     []knowledge.NewEdge{{Src: c2.ID, Dst: c1.ID, BaseType: "depends_on", SemanticType: "supports"}},
		SetStatus: []knowledge.StatusChange{{ObjectID: c1.ID, Status: "disputed", Action: "disputed"}},
	}
	got, atts, err := k.TransitionObject(ctx(t), subj.ID, claim.ClaimToken, tr)
	if err != nil {
		t.Fatalf("Transition: %v", err)
	}
	// The object as it now is.
	if got.ID != subj.ID || got.Kind != "question" || got.Title != "q" || got.Status != "awaiting_synthesis" ||
		got.Round != 1 || got.CreatedBy != "researcher" || !got.CreatedAt.Equal(backendtest.T0) || !got.UpdatedAt.Equal(now) {
		t.Fatalf("transitioned object %s", backendtest.AsJSON(t, got))
	}
	wantContent(t, "transitioned object", got, newContent)
	wantUnclaimed(t, "transitioned object", got)
	read := backendtest.MustGetObject(t, k, subj.ID)
	bare := read
	bare.Log, bare.Edges = nil, nil
	if backendtest.AsJSON(t, got) != backendtest.AsJSON(t, bare) {
		t.Fatalf("Transition returned %s\nGetObject reads  %s", backendtest.AsJSON(t, got), backendtest.AsJSON(t, bare))
	}
	// The attachments, in order.
	if len(atts) != 2 || atts[0].ID <= c2.ID || atts[1].ID <= c2.ID || atts[0].ID == atts[1].ID {
		t.Fatalf("attachments %s", backendtest.AsJSON(t, atts))
	}
	for i, want := range []struct{ kind, title, status, content string }{
		{"critique", "", "", `{"a":1,"text":"weak"}`}, {"claim", "found", "proposed", `{}`},
	} {
		a := atts[i]
		if a.Kind != want.kind || a.Title != want.title || a.Status != want.status || a.CreatedBy != "critic" ||
			a.Round != 0 || !a.CreatedAt.Equal(now) {
			t.Fatalf("attachment %d: %s", i, backendtest.AsJSON(t, a))
		}
		wantContent(t, fmt.Sprintf("attachment %d", i), a, want.content)
		wantUnclaimed(t, fmt.Sprintf("attachment %d", i), a)
		ra := backendtest.MustGetObject(t, k, a.ID)
		ra.Log, ra.Edges = nil, nil
		if backendtest.AsJSON(t, ra) != backendtest.AsJSON(t, a) {
			t.Fatalf("attachment %d returned %s, reads %s", i, backendtest.AsJSON(t, a), backendtest.AsJSON(t, ra))
		}
	}
	// The log: creation, then the transition pointing at the reasoning node,
	// with the content hash and round after the change.
	if len(read.Log) != 2 {
		t.Fatalf("log %s, want created and completed", backendtest.AsJSON(t, read.Log))
	}
	wantEntry(t, "creation entry", read.Log[0], cks.TransitionEntry{ObjectID: subj.ID, TS: backendtest.T0, Agent: "researcher",
		Action: "created", TransitionedTo: "awaiting_critique", ContentHash: subj.ContentHash}, true)
	wantEntry(t, "transition entry", read.Log[1], cks.TransitionEntry{ObjectID: subj.ID, TS: now, Agent: "critic",
		Action: "completed", TransitionedTo: "awaiting_synthesis", ReasoningNodeID: &atts[0].ID, ContentHash: newHash, Round: 1}, true)
	if read.Log[1].Seq <= read.Log[0].Seq {
		t.Fatalf("log seqs %d then %d", read.Log[0].Seq, read.Log[1].Seq)
	}
	// Edges: attachment → subject, links from the attachment, the extra edges.
	wantEdges(t, read, now,
		edgeKey(atts[0].ID, subj.ID, "depends_on", "critiques", w(-0.5)),
		edgeKey(atts[1].ID, subj.ID, "depends_on", "supports", nil))
	wantEdges(t, backendtest.MustGetObject(t, k, atts[0].ID), now,
		edgeKey(atts[0].ID, subj.ID, "depends_on", "critiques", w(-0.5)),
		edgeKey(atts[0].ID, c1.ID, "depends_on", "refutes", w(0.75)))
	rc1 := backendtest.MustGetObject(t, k, c1.ID)
	wantEdges(t, rc1, now,
		edgeKey(atts[0].ID, c1.ID, "depends_on", "refutes", w(0.75)),
		edgeKey(c2.ID, c1.ID, "depends_on", "supports", nil))
	wantEdges(t, backendtest.MustGetObject(t, k, c2.ID), now, edgeKey(c2.ID, c1.ID, "depends_on", "supports", nil))
	// SetStatus: its own log entry by the agent, pointing to the same
	// reasoning node (why the step changed it).
	if rc1.Status != "disputed" || len(rc1.Log) != 2 {
		t.Fatalf("set_status target %s", backendtest.AsJSON(t, rc1))
	}
	wantContent(t, "set_status target", rc1, `{"text":"c1"}`)
	wantEntry(t, "set_status entry", rc1.Log[1], cks.TransitionEntry{ObjectID: c1.ID, TS: now, Agent: "critic",
		Action: "disputed", TransitionedTo: "disputed", ReasoningNodeID: &atts[0].ID, ContentHash: c1.ContentHash, Round: 0}, true)
	// An attachment with a status enters its pipeline with a created entry.
	ra1 := backendtest.MustGetObject(t, k, atts[1].ID)
	if len(ra1.Log) != 1 {
		t.Fatalf("attachment with a status: log %s", backendtest.AsJSON(t, ra1.Log))
	}
	wantEntry(t, "attachment created entry", ra1.Log[0], cks.TransitionEntry{ObjectID: atts[1].ID, TS: now, Agent: "critic",
		Action: "created", TransitionedTo: "proposed", ContentHash: atts[1].ContentHash}, true)
	if ra0 := backendtest.MustGetObject(t, k, atts[0].ID); len(ra0.Log) != 0 {
		t.Fatalf("attachment without a status has log %s", backendtest.AsJSON(t, ra0.Log))
	}
	if n := len(backendtest.AllObjects(t, k)); n != 5 {
		t.Fatalf("%d objects, want 5", n)
	}
	// The claim is spent: the token no longer works, checked before the status.
	before := backendtest.ObjectSnapshot(t, k)
	_, _, err = k.TransitionObject(ctx(t), subj.ID, claim.ClaimToken, tr)
	backendtest.WantErr(t, "Transition with a spent claim", err, cks.ErrLeaseLost)
	backendtest.WantErr(t, "TouchClaim with a spent claim", k.TouchClaim(ctx(t), subj.ID, claim.ClaimToken), cks.ErrLeaseLost)
	backendtest.WantErr(t, "ReleaseClaim with a spent claim", k.ReleaseClaim(ctx(t), subj.ID, claim.ClaimToken), cks.ErrLeaseLost)
	wantUnchanged(t, "calls with a spent claim", k, before)
	// The next step claims it; without Content and NextRound they stay.
	clk.Advance(time.Minute)
	next := mustClaimObjects(t, k, "awaiting_synthesis", "synth-1", 10, 1)[0]
	if next.ID != subj.ID || next.ClaimToken == claim.ClaimToken {
		t.Fatalf("next claim %s", backendtest.AsJSON(t, next))
	}
	got, atts, err = k.TransitionObject(ctx(t), subj.ID, next.ClaimToken, knowledge.ObjectTransition{
		From: "awaiting_synthesis", To: "awaiting_arbitration", Action: "completed", Agent: "synthesizer", Reasoning: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "awaiting_arbitration" || got.Round != 1 || got.ContentHash != newHash || len(atts) != 0 {
		t.Fatalf("plain transition: %s, attachments %d", backendtest.AsJSON(t, got), len(atts))
	}
	wantUnclaimed(t, "plain transition", got)
	read = backendtest.MustGetObject(t, k, subj.ID)
	if len(read.Log) != 3 || len(read.Edges) != 2 {
		t.Fatalf("plain transition: log %d entries, %d edges", len(read.Log), len(read.Edges))
	}
	wantEntry(t, "plain transition entry", read.Log[2], cks.TransitionEntry{ObjectID: subj.ID, TS: clk.Now(), Agent: "synthesizer",
		Action: "completed", TransitionedTo: "awaiting_arbitration", ContentHash: newHash, Round: 1}, true)
}

// testObjectTransitionSameStatus: To == From records an outcome that does
// not move the object (a failure), with a log entry, and releases the claim.
func testObjectTransitionSameStatus(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Content: json.RawMessage(`{"q":1}`), Status: "awaiting_critique", CreatedBy: "op"})
	claim := mustClaimObjects(t, k, "awaiting_critique", "critic-1", 1, 1)[0]
	clk.Advance(time.Minute)
	got, atts, err := k.TransitionObject(ctx(t), o.ID, claim.ClaimToken, knowledge.ObjectTransition{
		From: "awaiting_critique", To: "awaiting_critique", Action: "failed", Agent: "critic", Reasoning: 0,
		Attach: []knowledge.Attachment{{Object: knowledge.NewObject{Kind: "model_reply", Content: json.RawMessage(`{"raw":"garbage"}`)},
			BaseType: "depends_on", SemanticType: "rejected_reply"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "awaiting_critique" || got.Round != 0 || got.ContentHash != o.ContentHash || len(atts) != 1 {
		t.Fatalf("failure transition: %s, %d attachments", backendtest.AsJSON(t, got), len(atts))
	}
	wantUnclaimed(t, "failure transition", got)
	read := backendtest.MustGetObject(t, k, o.ID)
	if len(read.Log) != 2 {
		t.Fatalf("log %s, want created and failed", backendtest.AsJSON(t, read.Log))
	}
	wantEntry(t, "failure entry", read.Log[1], cks.TransitionEntry{ObjectID: o.ID, TS: clk.Now(), Agent: "critic",
		Action: "failed", TransitionedTo: "awaiting_critique", ReasoningNodeID: &atts[0].ID, ContentHash: o.ContentHash}, true)
	wantEdges(t, read, clk.Now(), edgeKey(atts[0].ID, o.ID, "depends_on", "rejected_reply", nil))
	again := mustClaimObjects(t, k, "awaiting_critique", "critic-2", 1, 1)[0]
	if again.ID != o.ID || again.ClaimToken == claim.ClaimToken {
		t.Fatalf("reclaim after failure: %s", backendtest.AsJSON(t, again))
	}
}

func testObjectTransitionErrors(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	subj := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Content: json.RawMessage(`{"q":1}`), Status: "awaiting_critique", CreatedBy: "op"})
	c1 := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Status: "supported", CreatedBy: "op"})
	c2 := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim"})
	if _, err := k.AddEdges(ctx(t), []knowledge.NewEdge{{Src: c2.ID, Dst: subj.ID, BaseType: "depends_on", SemanticType: "cites"}}); err != nil {
		t.Fatal(err)
	}
	claim := mustClaimObjects(t, k, "awaiting_critique", "critic-1", 1, 1)[0]
	clk.Advance(time.Minute)
	missing := c2.ID + 1000
	w := func(v float64) *float64 { return &v }
	// good writes something of every kind, so a partial write would show.
	good := func() knowledge.ObjectTransition {
		return knowledge.ObjectTransition{
			From: "awaiting_critique", To: "awaiting_synthesis", Action: "completed", Agent: "critic",
			Content: json.RawMessage(`{"q":2}`), NextRound: true, Reasoning: 0,
			Attach: []knowledge.Attachment{{Object: knowledge.NewObject{Kind: "critique", Status: "filed", CreatedBy: "critic"},
				BaseType: "depends_on", SemanticType: "critiques", Weight: w(0.5),
				Links: []knowledge.LinkFrom{{Dst: c1.ID, BaseType: "depends_on", SemanticType: "refutes"}}}},
			Edges:     []knowledge.NewEdge{{Src: c2.ID, Dst: c1.ID, BaseType: "depends_on", SemanticType: "supports", Weight: w(1)}},
			SetStatus: []knowledge.StatusChange{{ObjectID: c1.ID, Status: "disputed", Action: "disputed"}},
		}
	}
	before := backendtest.ObjectSnapshot(t, k)
	cases := []struct {
		name  string
		token string
		edit  func(*knowledge.ObjectTransition)
		check func(err error) bool
		want  string
	}{
		{"wrong token", "not-the-token", nil,
			func(err error) bool { return errors.Is(err, cks.ErrLeaseLost) }, "ErrLeaseLost"},
		{"empty token", "", nil,
			func(err error) bool {
				return errors.Is(err, cks.ErrLeaseLost) || cks.IsFieldError(err, "claim_token")
			}, "ErrLeaseLost"},
		{"status no longer from", "", func(x *knowledge.ObjectTransition) { x.From = "awaiting_research" },
			func(err error) bool { return errors.Is(err, cks.ErrConflict) && !errors.Is(err, cks.ErrLeaseLost) }, "ErrConflict (not ErrLeaseLost)"},
	}
	for _, f := range []struct {
		field string
		edit  func(*knowledge.ObjectTransition)
	}{
		{"attach[0].links[0].dst", func(x *knowledge.ObjectTransition) { x.Attach[0].Links[0].Dst = missing }},
		{"edges[0].dst", func(x *knowledge.ObjectTransition) { x.Edges[0].Dst = missing }},
		{"edges[0].src", func(x *knowledge.ObjectTransition) { x.Edges[0].Src = missing }},
		{"edges[1].dst", func(x *knowledge.ObjectTransition) {
			x.Edges = append(x.Edges, knowledge.NewEdge{Src: c1.ID, Dst: missing, BaseType: "depends_on"})
		}},
		{"attach[0].weight", func(x *knowledge.ObjectTransition) { x.Attach[0].Weight = w(2) }},
		{"edges[0].weight", func(x *knowledge.ObjectTransition) { x.Edges[0].Weight = w(math.NaN()) }},
		{"attach[0].links[0].weight", func(x *knowledge.ObjectTransition) { x.Attach[0].Links[0].Weight = w(-1.5) }},
		{"reasoning", func(x *knowledge.ObjectTransition) { x.Reasoning = 1 }},
		{"reasoning", func(x *knowledge.ObjectTransition) { x.Reasoning = -2 }},
		{"reasoning", func(x *knowledge.ObjectTransition) { x.Attach = nil }},
		{"to", func(x *knowledge.ObjectTransition) { x.To = "Synthesis" }},
		{"action", func(x *knowledge.ObjectTransition) { x.Action = "" }},
		{"agent", func(x *knowledge.ObjectTransition) { x.Agent = "" }},
		{"content", func(x *knowledge.ObjectTransition) { x.Content = json.RawMessage(`[1]`) }},
		{"attach[0].object.kind", func(x *knowledge.ObjectTransition) { x.Attach[0].Object.Kind = "" }},
		{"set_status[0].status", func(x *knowledge.ObjectTransition) { x.SetStatus[0].Status = "Bad Status" }},
	} {
		cases = append(cases, struct {
			name  string
			token string
			edit  func(*knowledge.ObjectTransition)
			check func(err error) bool
			want  string
		}{"bad " + f.field, "", f.edit, func(err error) bool {
			return errors.Is(err, cks.ErrInvalid) && cks.IsFieldError(err, f.field)
		}, "a FieldError naming " + f.field})
	}
	cases = append(cases, struct {
		name  string
		token string
		edit  func(*knowledge.ObjectTransition)
		check func(err error) bool
		want  string
	}{"set_status of a missing object", "", func(x *knowledge.ObjectTransition) { x.SetStatus[0].ObjectID = missing },
		func(err error) bool {
			return (errors.Is(err, cks.ErrNotFound) && strings.Contains(err.Error(), fmt.Sprint(missing))) ||
				cks.IsFieldError(err, "set_status[0].object_id")
		}, "ErrNotFound naming the id or a FieldError naming set_status[0].object_id"})
	cases = append(cases, struct {
		name  string
		token string
		edit  func(*knowledge.ObjectTransition)
		check func(err error) bool
		want  string
	}{"set_status of the transitioned object", "", func(x *knowledge.ObjectTransition) { x.SetStatus[0].ObjectID = subj.ID },
		func(err error) bool { return cks.IsFieldError(err, "set_status[0].object_id") },
		"a FieldError naming set_status[0].object_id (its status is To)"})
	for _, c := range cases {
		token := claim.ClaimToken
		if c.token != "" || c.name == "empty token" {
			token = c.token
		}
		x := good()
		if c.edit != nil {
			c.edit(&x)
		}
		_, atts, err := k.TransitionObject(ctx(t), subj.ID, token, x)
		if !c.check(err) {
			t.Errorf("%s: err = %v, want %s", c.name, err, c.want)
		}
		if len(atts) != 0 {
			t.Errorf("%s: returned attachments %s", c.name, backendtest.AsJSON(t, atts))
		}
		wantUnchanged(t, c.name, k, before)
	}
	// The claim survived every refused transition.
	got, _, err := k.TransitionObject(ctx(t), subj.ID, claim.ClaimToken, good())
	if err != nil || got.Status != "awaiting_synthesis" || got.Round != 1 {
		t.Fatalf("transition after the refused ones: %s, %v", backendtest.AsJSON(t, got), err)
	}
}

func testObjectTouchAndReleaseClaim(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "awaiting_critique", CreatedBy: "op"})
	clk.Advance(time.Minute)
	claim := mustClaimObjects(t, k, "awaiting_critique", "critic-1", 1, 1)[0]
	clk.Advance(2 * time.Minute)
	if err := k.TouchClaim(ctx(t), o.ID, claim.ClaimToken); err != nil {
		t.Fatalf("TouchClaim: %v", err)
	}
	got := backendtest.MustGetObject(t, k, o.ID)
	if got.ClaimedBy != "critic-1" || got.ClaimToken != "" || !got.ClaimedAt.Equal(backendtest.T0.Add(3*time.Minute)) ||
		got.Status != "awaiting_critique" || len(got.Log) != 1 {
		t.Fatalf("after TouchClaim: %s, want claimed_at %v", backendtest.AsJSON(t, got), backendtest.T0.Add(3*time.Minute))
	}
	before := backendtest.ObjectSnapshot(t, k)
	backendtest.WantErr(t, "TouchClaim with a wrong token", k.TouchClaim(ctx(t), o.ID, "wrong"), cks.ErrLeaseLost)
	backendtest.WantErr(t, "ReleaseClaim with a wrong token", k.ReleaseClaim(ctx(t), o.ID, "wrong"), cks.ErrLeaseLost)
	wantUnchanged(t, "wrong tokens", k, before)
	clk.Advance(time.Minute)
	if err := k.ReleaseClaim(ctx(t), o.ID, claim.ClaimToken); err != nil {
		t.Fatalf("ReleaseClaim: %v", err)
	}
	got = backendtest.MustGetObject(t, k, o.ID)
	wantUnclaimed(t, "released object", got)
	if got.Status != "awaiting_critique" || len(got.Log) != 1 || got.Round != 0 || got.ContentHash != o.ContentHash {
		t.Fatalf("release changed more than the claim: %s", backendtest.AsJSON(t, got))
	}
	backendtest.WantErr(t, "TouchClaim after release", k.TouchClaim(ctx(t), o.ID, claim.ClaimToken), cks.ErrLeaseLost)
	backendtest.WantErr(t, "ReleaseClaim twice", k.ReleaseClaim(ctx(t), o.ID, claim.ClaimToken), cks.ErrLeaseLost)
	_, _, err := k.TransitionObject(ctx(t), o.ID, claim.ClaimToken, knowledge.ObjectTransition{From: "awaiting_critique",
		To: "awaiting_synthesis", Action: "completed", Agent: "critic", Reasoning: -1})
	backendtest.WantErr(t, "Transition after release", err, cks.ErrLeaseLost)
	again := mustClaimObjects(t, k, "awaiting_critique", "critic-2", 1, 1)[0]
	if again.ID != o.ID || again.ClaimToken == claim.ClaimToken || again.ClaimedBy != "critic-2" || !again.ClaimedAt.Equal(clk.Now()) {
		t.Fatalf("claim after release: %s", backendtest.AsJSON(t, again))
	}
	backendtest.WantErr(t, "old token after a new claim", k.TouchClaim(ctx(t), o.ID, claim.ClaimToken), cks.ErrLeaseLost)
	if got := backendtest.MustGetObject(t, k, o.ID); len(got.Log) != 1 {
		t.Fatalf("claims and releases logged: %s", backendtest.AsJSON(t, got.Log))
	}
}

func testObjectReleaseStaleClaims(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	var ids []int64
	for i := range 4 {
		ids = append(ids, backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "s", Title: fmt.Sprint(i)}).ID)
	}
	other := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "other"}).ID
	unclaimed := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "s"}).ID
	first := mustClaimObjects(t, k, "s", "w", 2, 2) // ids[0], ids[1] at T0
	mustClaimObjects(t, k, "other", "w", 1, 1)      // other at T0
	clk.Advance(time.Minute)
	third := mustClaimObjects(t, k, "s", "w", 1, 1)[0] // ids[2] at T0+1m
	clk.Advance(time.Minute)
	fourth := mustClaimObjects(t, k, "s", "w", 1, 1)[0] // ids[3] at T0+2m
	clk.Advance(time.Minute)
	if fmt.Sprint(sortedIDs(first), third.ID, fourth.ID) != fmt.Sprint(ids[:2], ids[2], ids[3]) {
		t.Fatalf("setup claims %v %d %d, want %v", sortedIDs(first), third.ID, fourth.ID, ids)
	}
	// ids[0] is renewed after the cutoff.
	touched := first[0]
	if touched.ID != ids[0] {
		touched = first[1]
	}
	if err := k.TouchClaim(ctx(t), touched.ID, touched.ClaimToken); err != nil {
		t.Fatal(err)
	}
	before := backendtest.ObjectSnapshot(t, k)
	n, err := k.ReleaseStaleClaims(ctx(t), backendtest.T0.Add(time.Minute))
	if err != nil || n != 3 {
		t.Fatalf("ReleaseStaleClaims(T0+1m) = %d, %v; want 3 (ids %d, %d at T0, %d at the cutoff)", n, err, ids[1], other, ids[2])
	}
	after := backendtest.ObjectSnapshot(t, k)
	for _, id := range []int64{ids[1], other, ids[2]} {
		got := backendtest.MustGetObject(t, k, id)
		wantUnclaimed(t, "stale claim", got)
		// Only the claim changed: no log entry, status and content kept.
		var was cks.Object
		if err := json.Unmarshal([]byte(before[id]), &was); err != nil {
			t.Fatal(err)
		}
		if got.Status != was.Status || len(got.Log) != len(was.Log) || got.ContentHash != was.ContentHash || got.Round != was.Round {
			t.Fatalf("released object %d: %s, was %s", id, backendtest.AsJSON(t, got), before[id])
		}
	}
	for _, id := range []int64{ids[0], ids[3], unclaimed} {
		if after[id] != before[id] {
			t.Fatalf("object %d changed:\n%s\nwas %s", id, after[id], before[id])
		}
	}
	// The kept claims still work; the released tokens do not.
	if err := k.TouchClaim(ctx(t), touched.ID, touched.ClaimToken); err != nil {
		t.Fatalf("renewed claim: %v", err)
	}
	if err := k.TouchClaim(ctx(t), fourth.ID, fourth.ClaimToken); err != nil {
		t.Fatalf("claim after the cutoff: %v", err)
	}
	backendtest.WantErr(t, "released claim", k.TouchClaim(ctx(t), third.ID, third.ClaimToken), cks.ErrLeaseLost)
	// The released objects are claimable again, oldest first.
	again := mustClaimObjects(t, k, "s", "w2", 10, 3)
	if fmt.Sprint(sortedIDs(again)) != fmt.Sprint([]int64{ids[1], ids[2], unclaimed}) {
		t.Fatalf("reclaimed %v, want %v", sortedIDs(again), []int64{ids[1], ids[2], unclaimed})
	}
	if n, err := k.ReleaseStaleClaims(ctx(t), backendtest.T0.Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("second ReleaseStaleClaims = %d, %v; want 0", n, err)
	}
	clk.Advance(time.Minute)
	if n, err := k.ReleaseStaleClaims(ctx(t), clk.Now()); err != nil || n != 5 {
		t.Fatalf("ReleaseStaleClaims(now) = %d, %v; want every one of the 5 claims", n, err)
	}
	for _, o := range backendtest.AllObjects(t, k) {
		wantUnclaimed(t, "after releasing all", o)
	}
}

func testObjectAddEdges(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	o1 := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim"})
	o2 := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Status: "awaiting_research"})
	o3 := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "critique"})
	clk.Advance(time.Minute)
	w := func(v float64) *float64 { return &v }
	in := []knowledge.NewEdge{
		{Src: o1.ID, Dst: o2.ID, BaseType: "depends_on", SemanticType: "supports", Weight: w(0.25)},
		{Src: o3.ID, Dst: o2.ID, BaseType: "depends_on", SemanticType: "refutes", Weight: w(-1)},
		{Src: o3.ID, Dst: o1.ID, BaseType: "relates_to"},
	}
	edges, err := k.AddEdges(ctx(t), in)
	if err != nil {
		t.Fatalf("AddEdges: %v", err)
	}
	if len(edges) != len(in) {
		t.Fatalf("AddEdges returned %d edges, want %d", len(edges), len(in))
	}
	ids := map[int64]bool{}
	for i, e := range edges {
		want := edgeKey(in[i].Src, in[i].Dst, in[i].BaseType, in[i].SemanticType, in[i].Weight)
		if got := edgeKey(e.Src, e.Dst, e.BaseType, e.SemanticType, e.Weight); got != want || e.ID <= 0 || ids[e.ID] || !e.CreatedAt.Equal(clk.Now()) {
			t.Fatalf("edge %d: %s, want %s with a fresh id at %v", i, backendtest.AsJSON(t, e), want, clk.Now())
		}
		ids[e.ID] = true
	}
	now := clk.Now()
	wantEdges(t, backendtest.MustGetObject(t, k, o2.ID), now, edgeKey(o1.ID, o2.ID, "depends_on", "supports", w(0.25)),
		edgeKey(o3.ID, o2.ID, "depends_on", "refutes", w(-1)))
	wantEdges(t, backendtest.MustGetObject(t, k, o1.ID), now, edgeKey(o1.ID, o2.ID, "depends_on", "supports", w(0.25)),
		edgeKey(o3.ID, o1.ID, "relates_to", "", nil))
	r3 := backendtest.MustGetObject(t, k, o3.ID)
	wantEdges(t, r3, now, edgeKey(o3.ID, o2.ID, "depends_on", "refutes", w(-1)), edgeKey(o3.ID, o1.ID, "relates_to", "", nil))
	// GetObject's edges are the stored edges, oldest first.
	for i, e := range r3.Edges {
		if i > 0 && e.ID < r3.Edges[i-1].ID {
			t.Fatalf("edges not oldest first: %s", backendtest.AsJSON(t, r3.Edges))
		}
		if e.ID != edges[1].ID && e.ID != edges[2].ID {
			t.Fatalf("edge %d not among the returned ids", e.ID)
		}
	}
	if got := backendtest.MustGetObject(t, k, o2.ID); len(got.Log) != 1 || got.Status != "awaiting_research" {
		t.Fatalf("AddEdges changed the object: %s", backendtest.AsJSON(t, got))
	}
	// All or none.
	missing := o3.ID + 1000
	before := backendtest.ObjectSnapshot(t, k)
	bad := []struct {
		field string
		edges []knowledge.NewEdge
	}{
		{"edges[1].dst", []knowledge.NewEdge{{Src: o1.ID, Dst: o3.ID, BaseType: "depends_on"}, {Src: o2.ID, Dst: missing, BaseType: "depends_on"}}},
		{"edges[0].src", []knowledge.NewEdge{{Src: missing, Dst: o3.ID, BaseType: "depends_on"}, {Src: o2.ID, Dst: o3.ID, BaseType: "depends_on"}}},
		{"edges[2].src", []knowledge.NewEdge{{Src: o1.ID, Dst: o3.ID, BaseType: "a"}, {Src: o2.ID, Dst: o3.ID, BaseType: "b"}, {Src: missing, Dst: o1.ID, BaseType: "c"}}},
		{"edges[1].weight", []knowledge.NewEdge{{Src: o1.ID, Dst: o3.ID, BaseType: "depends_on"}, {Src: o2.ID, Dst: o3.ID, BaseType: "depends_on", Weight: w(2)}}},
		{"edges[0].weight", []knowledge.NewEdge{{Src: o1.ID, Dst: o3.ID, BaseType: "depends_on", Weight: w(math.NaN())}}},
		{"edges[0].base_type", []knowledge.NewEdge{{Src: o1.ID, Dst: o3.ID}}},
		{"edges[0].semantic_type", []knowledge.NewEdge{{Src: o1.ID, Dst: o3.ID, BaseType: "depends_on", SemanticType: "Refutes"}}},
		{"edges[0].src", []knowledge.NewEdge{{Src: 0, Dst: o3.ID, BaseType: "depends_on"}}},
		{"edges[0].dst", []knowledge.NewEdge{{Src: o1.ID, Dst: -1, BaseType: "depends_on"}}},
	}
	for _, c := range bad {
		got, err := k.AddEdges(ctx(t), c.edges)
		wantFieldError(t, fmt.Sprintf("AddEdges(%v)", edgeKeys(c.edges)), err, c.field)
		if len(got) != 0 {
			t.Errorf("refused AddEdges returned %s", backendtest.AsJSON(t, got))
		}
	}
	wantUnchanged(t, "refused AddEdges", k, before)
}

// testKnowledgeTopicPublished: every write that makes an object claimable
// (created with a status, status changed, claim given back or released as
// stale) wakes watchers of TopicObjects on other handles; taking a claim
// does not.
func testKnowledgeTopicPublished(t *testing.T, open backendtest.Opener) {
	k, clk := knowledgeStore(t, open)
	w := backendtest.Watch(t, open(t, driver.WithChangePollInterval(backendtest.FastPoll)), cks.TopicObjects)
	w.Ready(t, cks.TopicObjects)
	drain := func() {
		for {
			select {
			case <-w.Calls:
			default:
				return
			}
		}
	}
	var claim cks.Object
	steps := []struct {
		name string
		do   func() error
	}{
		{"CreateObject with a status", func() error {
			_, err := k.CreateObject(ctx(t), knowledge.NewObject{Kind: "question", Status: "a"})
			return err
		}},
		{"ClaimObjects (quiet)", func() error {
			os, err := k.ClaimObjects(ctx(t), "a", "w", 1)
			if err == nil && len(os) != 1 {
				err = fmt.Errorf("claimed %d", len(os))
			}
			if len(os) > 0 {
				claim = os[0]
			}
			return err
		}},
		{"ReleaseClaim", func() error { return k.ReleaseClaim(ctx(t), claim.ID, claim.ClaimToken) }},
		{"ClaimObjects again (quiet)", func() error {
			os, err := k.ClaimObjects(ctx(t), "a", "w", 1)
			if err == nil && len(os) != 1 {
				err = fmt.Errorf("claimed %d", len(os))
			}
			if len(os) > 0 {
				claim = os[0]
			}
			return err
		}},
		{"Transition", func() error {
			_, _, err := k.TransitionObject(ctx(t), claim.ID, claim.ClaimToken, knowledge.ObjectTransition{
				From: "a", To: "b", Action: "completed", Agent: "step", Reasoning: -1})
			return err
		}},
		{"ClaimObjects of the new status (quiet)", func() error {
			os, err := k.ClaimObjects(ctx(t), "b", "w", 1)
			if err == nil && len(os) != 1 {
				err = fmt.Errorf("claimed %d", len(os))
			}
			return err
		}},
		{"ReleaseStaleClaims", func() error {
			clk.Advance(time.Hour)
			n, err := k.ReleaseStaleClaims(ctx(t), clk.Now())
			if err == nil && n != 1 {
				err = fmt.Errorf("released %d", n)
			}
			return err
		}},
	}
	for _, s := range steps {
		drain()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if strings.HasSuffix(s.name, "(quiet)") {
			w.Quiet(t)
			continue
		}
		if got := w.Next(t); got != cks.TopicObjects {
			t.Fatalf("%s woke %q, want %q", s.name, got, cks.TopicObjects)
		}
	}
}

// ctx bounds a test's calls: backendtest.Ctx.
var ctx = backendtest.Ctx
