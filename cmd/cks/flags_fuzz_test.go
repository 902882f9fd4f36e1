package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cks-dev/cks"
)

// FuzzJSONFlag is the --payload (task create, task update) and --metadata
// (task update) parsing: empty is "not given", anything else is accepted
// exactly when it is a JSON value and then sent as written; a refusal is a
// usage error naming the flag. Whatever the hub would accept as a payload or
// metadata the CLI accepts too, and what it accepts marshals into a request.
func FuzzJSONFlag(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":[1,2]}`, " 5 ", "null", `"s"`, "{", "{} {}", "1e400", `"\u0000"`, "\x00", `"\xff"`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, val string) {
		for _, name := range []string{"payload", "metadata"} {
			got, err := jsonFlag(name, val)
			if err != nil {
				if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--"+name) {
					t.Fatalf("--%s %q: error %v, want a usage error naming --%s", name, val, err, name)
				}
				if json.Valid([]byte(val)) {
					t.Fatalf("--%s %q: refused a JSON value: %v", name, val, err)
				}
				// The hub refuses it too.
				if _, herr := (cks.NewTask{Type: "t", Payload: json.RawMessage(val)}).Validate(); name == "payload" && herr == nil {
					t.Fatalf("--payload %q: the CLI refuses what the hub accepts", val)
				}
				if m := (cks.TaskPatch{Metadata: json.RawMessage(val)}); name == "metadata" {
					if _, herr := m.Validate(); herr == nil {
						t.Fatalf("--metadata %q: the CLI refuses what the hub accepts", val)
					}
				}
				continue
			}
			if val == "" {
				if got != nil {
					t.Fatalf("--%s \"\": %q, want nil (not given)", name, got)
				}
				continue
			}
			if !bytes.Equal(got, []byte(val)) || !json.Valid(got) {
				t.Fatalf("--%s %q: got %q, want the value as written", name, val, got)
			}
			b, err := json.Marshal(cks.NewTask{Type: "t", Payload: got, Metadata: got})
			if err != nil || !json.Valid(b) {
				t.Fatalf("--%s %q: the request does not marshal: %v", name, val, err)
			}
		}
	})
}

// FuzzObjectSet is `cks object edit --set FIELD=VALUE…`: each set is
// accepted by the flag exactly when it has "=" and a non-blank field; applied
// to a base object, the result is a JSON object holding every field of the
// base that no set names, and for each named field (trimmed; the last set
// wins) VALUE as JSON when it is JSON, else as a string. A set that is not
// UTF-8 is refused (encoding it would silently replace the bad bytes). Sets
// are separated by newlines in the fuzz input.
func FuzzObjectSet(f *testing.F) {
	f.Add(`{"a":1,"b":"x"}`, "a=2\nc=hello")
	f.Add(`{}`, "tags=[\"x\",\"y\"]\nn=null\ns= spaced ")
	f.Add(`null`, "a=1")
	f.Add(`[1]`, "a=1")
	f.Add(``, "a=1")
	f.Add(`{"a":1}`, "=1\n a =\nb")
	f.Add(`{"a":1,"a":2}`, "a=1e400\nb=\xff\nc=\x00")
	f.Add(`{"k":{"deep":[1]}}`, "k.deep=3\nk=={}")
	f.Fuzz(func(t *testing.T, base, lines string) {
		var sets fieldSets
		for _, l := range strings.Split(lines, "\n") {
			field, _, ok := strings.Cut(l, "=")
			err := sets.Set(l)
			if want := ok && strings.TrimSpace(field) != "" && utf8.ValidString(l); (err == nil) != want {
				t.Fatalf("--set %q: error %v, want accepted %t", l, err, want)
			}
		}
		got, err := applySets(json.RawMessage(base), sets)
		var baseObj map[string]json.RawMessage
		if base != "" && (json.Unmarshal([]byte(base), &baseObj) != nil || baseObj == nil) {
			if err == nil {
				t.Fatalf("base %q is no JSON object, yet the sets applied: %s", base, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("base %q, sets %q: %v", base, sets, err)
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal(got, &out); err != nil || out == nil {
			t.Fatalf("base %q, sets %q: result %s is not a JSON object: %v", base, sets, got, err)
		}
		want := map[string]string{}
		for _, s := range sets {
			field, val, _ := strings.Cut(s, "=")
			want[strings.TrimSpace(field)] = val
		}
		for k, v := range baseObj {
			if _, set := want[k]; !set && !jsonEqual(t, out[k], v) {
				t.Fatalf("base %q, sets %q: field %q changed from %s to %s", base, sets, k, v, out[k])
			}
		}
		for k, val := range want {
			asJSON := json.Valid([]byte(val)) && strings.TrimSpace(val) != ""
			switch {
			case asJSON && !jsonEqual(t, out[k], json.RawMessage(val)):
				t.Fatalf("--set %s=%s: field is %s, want the JSON value", k, val, out[k])
			case !asJSON:
				var s string
				if err := json.Unmarshal(out[k], &s); err != nil || (utf8.ValidString(val) && s != val) {
					t.Fatalf("--set %s=%s: field is %s, want the string", k, val, out[k])
				}
			}
		}
		if len(out) != len(baseObj)+countNew(want, baseObj) {
			t.Fatalf("base %q, sets %q: result %s has %d fields, want %d", base, sets, got, len(out), len(baseObj)+countNew(want, baseObj))
		}
	})
}

// countNew counts the fields of want that base does not have.
func countNew(want map[string]string, base map[string]json.RawMessage) int {
	n := 0
	for k := range want {
		if _, ok := base[k]; !ok {
			n++
		}
	}
	return n
}

// jsonEqual reports whether two JSON texts hold the same value (numbers
// compared as written: json.Marshal may escape a RawMessage differently).
func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	decode := func(raw json.RawMessage) (any, bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		return v, dec.Decode(&v) == nil
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}
