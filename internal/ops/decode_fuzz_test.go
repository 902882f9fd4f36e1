package ops_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cks-dev/cks/internal/ops"
)

// FuzzDecode decodes arbitrary JSON text as the input of every operation
// (ops.Decode: the streaming count of every list against its bound, then
// one decode): never a panic, and an input it takes has no list longer
// than the bound its schema states (maxItems), nested lists included.
//
// Run with: go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 30s ./internal/ops
func FuzzDecode(f *testing.F) {
	var inputs []ops.Operation
	for _, op := range ops.All() {
		if !op.Spec().Stream {
			inputs = append(inputs, op)
		}
	}
	for i, s := range []string{`{}`, `{"task_id":1,"add_children":[{"type":"t","depends_on":[1,2]}],"cancel_children":[3]}`,
		`{"add_children":[` + strings.Repeat(`1,`, 150) + `1]}`, `{"state":"OPEN","type":["a","b"]}`, `{"task_ids":[1,2,3],"reason":"r"}`,
		`{"grants":[{"resource":"/","permission":"read"}]}`, `{"a":[[[[]]]]}`, `{"add_children":[{"depends_on":[` + strings.Repeat(`1,`, 1001) + `1]}]}`,
		`[1,2]`, `{"types":"t"}`, `{"task_id":1,"add_children":[{"type":"t"},{"type":"u","depends_on":"x"}]}`, `{"x":1}{`} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		op := inputs[int(which)%len(inputs)]
		in := op.NewInput()
		if err := ops.Decode(data, in); err != nil {
			return
		}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("%s: a decoded input does not encode: %v", op.Spec().Name, err)
		}
		var v any
		json.Unmarshal(b, &v) //nolint:errcheck // it was just encoded
		within(t, op.Spec().Name, op.InputSchema(), v, "")
	})
}

// within fails for a list in v, the JSON of a value of schema s at path,
// longer than s states.
func within(t *testing.T, op string, s *jsonschema.Schema, v any, path string) {
	t.Helper()
	if s == nil {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for name, p := range s.Properties {
			if name == "payload" || name == "metadata" || name == "content" {
				continue
			}
			for _, b := range branches(p) {
				within(t, op, b, x[name], path+"."+name)
			}
		}
	case []any:
		if s.Type != "array" {
			return
		}
		if s.MaxItems == nil || len(x) > *s.MaxItems {
			t.Fatalf("%s: decoded %s of %d items, past the schema's %v", op, path, len(x), s.MaxItems)
		}
		for _, item := range x {
			within(t, op, s.Items, item, path+"[]")
		}
	}
}
