package cks_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
)

// jsonFields returns the JSON field names of struct type T.
func jsonFields[T any]() []string {
	var out []string
	rt := reflect.TypeFor[T]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// fieldErr returns err as a FieldError, failing unless it is one (and
// matches ErrInvalid).
func fieldErr(t *testing.T, input []byte, err error) *cks.FieldError {
	t.Helper()
	var fe *cks.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, cks.ErrInvalid) {
		t.Fatalf("%s: error %v (%T), want a *cks.FieldError", input, err, err)
	}
	return fe
}

// isObject reports whether b is one JSON object.
func isObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// checkValidTask asserts what NewTask.Validate promises of a task it accepts.
func checkValidTask(t *testing.T, input []byte, in, v cks.NewTask) {
	t.Helper()
	switch {
	case v.Type == "":
		t.Fatalf("%s: accepted an empty type", input)
	case v.Priority < 0 || v.Priority > cks.MaxPriority:
		t.Fatalf("%s: accepted priority %d", input, v.Priority)
	case v.MaxAttempts < 1 || v.MaxAttempts > cks.MaxMaxAttempts:
		t.Fatalf("%s: max_attempts %d after defaults", input, v.MaxAttempts)
	case len(v.Payload) == 0 || !json.Valid(v.Payload):
		t.Fatalf("%s: payload %q after defaults is not a JSON value", input, v.Payload)
	case !isObject(v.Metadata):
		t.Fatalf("%s: metadata %q after defaults is not a JSON object", input, v.Metadata)
	case v.ParentID != nil && *v.ParentID <= 0:
		t.Fatalf("%s: accepted parent_id %d", input, *v.ParentID)
	case v.DedupeOnce && v.DedupeKey == "":
		t.Fatalf("%s: accepted dedupe_once without a dedupe_key", input)
	}
	// depends_on: the input's ids, positive, first occurrences in order.
	var want []int64
	for _, d := range in.DependsOn {
		if !slices.Contains(want, d) {
			want = append(want, d)
		}
	}
	if !slices.Equal(v.DependsOn, want) && !(len(want) == 0 && len(v.DependsOn) == 0) {
		t.Fatalf("%s: depends_on %v, want %v (deduplicated in order)", input, v.DependsOn, want)
	}
	for _, d := range v.DependsOn {
		if d <= 0 {
			t.Fatalf("%s: accepted depends_on id %d", input, d)
		}
	}
	if len(in.Payload) > 0 && !bytes.Equal(v.Payload, in.Payload) {
		t.Fatalf("%s: payload %q changed to %q", input, in.Payload, v.Payload)
	}
	// Validating what Validate returned changes nothing and accepts it.
	again, err := v.Validate()
	if err != nil || !reflect.DeepEqual(again, v) {
		t.Fatalf("%s: Validate is not idempotent: %+v → %+v, %v", input, v, again, err)
	}
}

// FuzzNewTaskValidate decodes a body as POST /v1/tasks does and validates it:
// a refusal is a FieldError naming a field of the request; an accepted task
// has its defaults filled in, keeps what was given, and validates again to
// itself.
func FuzzNewTaskValidate(f *testing.F) {
	for _, s := range []string{`{"type":"t"}`, `{"type":"t","priority":1000,"max_attempts":10,"payload":[1,{"a":null}]}`,
		`{"type":"t","priority":-1}`, `{"type":"t","max_attempts":11}`, `{"type":"t","payload":"x"}`, `{"type":"t","payload":null}`,
		`{"type":"t","metadata":[]}`, `{"type":"t","metadata":{"a":1}}`, `{"type":"t","parent_id":0}`, `{"type":"t","depends_on":[3,1,3]}`,
		`{"type":"t","depends_on":[0]}`, `{"type":"t","dedupe_once":true}`, `{"type":"t\u0000","title":"\ud800"}`, `{}`} {
		f.Add([]byte(s))
	}
	fields := jsonFields[cks.NewTask]()
	f.Fuzz(func(t *testing.T, body []byte) {
		var n cks.NewTask
		if json.Unmarshal(body, &n) != nil {
			return
		}
		v, err := n.Validate()
		if err != nil {
			if fe := fieldErr(t, body, err); !slices.Contains(fields, fe.Field) {
				t.Fatalf("%s: FieldError names %q, which is no field of a task (%v)", body, fe.Field, fields)
			}
			return
		}
		checkValidTask(t, body, n, v)
	})
}

// childField is the field name of an invalid child of a patch.
var childField = regexp.MustCompile(`^add_children\[(\d+)\]\.(.+)$`)

// FuzzTaskPatchValidate decodes a body as PATCH /v1/tasks/{id} does and
// validates the patch: a refusal names a field of the patch (or of one of its
// children); an accepted patch changes something, has sound ids and values,
// children that are valid tasks, and validates again to itself; Fields and
// Material agree with it.
func FuzzTaskPatchValidate(f *testing.F) {
	for _, s := range []string{`{"title":"x"}`, `{}`, `{"priority":1001}`, `{"payload":{"a":1},"metadata":{"b":2}}`,
		`{"metadata":"x"}`, `{"add_depends_on":[1,2],"remove_depends_on":[2]}`, `{"cancel_children":[-1]}`,
		`{"add_children":[{"type":"c"},{"type":""}]}`, `{"add_children":[{"type":"c","parent_id":4}]}`,
		`{"description":"","acceptance_criteria":""}`, `{"payload":null}`, `{"title":null,"priority":null}`} {
		f.Add([]byte(s))
	}
	patchFields := jsonFields[cks.TaskPatch]()
	taskFields := jsonFields[cks.NewTask]()
	material := []string{"description", "acceptance_criteria", "payload", "add_depends_on", "remove_depends_on", "add_children", "cancel_children"}
	f.Fuzz(func(t *testing.T, body []byte) {
		var p cks.TaskPatch
		if json.Unmarshal(body, &p) != nil {
			return
		}
		v, err := p.Validate()
		if err != nil {
			fe := fieldErr(t, body, err)
			if m := childField.FindStringSubmatch(fe.Field); m != nil {
				var i int
				fmt.Sscan(m[1], &i)
				if i >= len(p.AddChildren) || !slices.Contains(taskFields, m[2]) {
					t.Fatalf("%s: FieldError names %q, which is no field of child %s of %d", body, fe.Field, m[1], len(p.AddChildren))
				}
			} else if fe.Field != "patch" && !slices.Contains(patchFields, fe.Field) {
				t.Fatalf("%s: FieldError names %q, which is no field of a patch (%v)", body, fe.Field, patchFields)
			}
			return
		}
		switch {
		case v.Empty():
			t.Fatalf("%s: accepted a patch that changes nothing", body)
		case v.Priority != nil && (*v.Priority < 0 || *v.Priority > cks.MaxPriority):
			t.Fatalf("%s: accepted priority %d", body, *v.Priority)
		case len(v.Payload) > 0 && !json.Valid(v.Payload):
			t.Fatalf("%s: accepted payload %q", body, v.Payload)
		case len(v.Metadata) > 0 && !isObject(v.Metadata):
			t.Fatalf("%s: accepted metadata %q", body, v.Metadata)
		case len(v.AddChildren) != len(p.AddChildren):
			t.Fatalf("%s: %d children became %d", body, len(p.AddChildren), len(v.AddChildren))
		}
		for _, ids := range [][]int64{v.AddDependsOn, v.RemoveDependsOn, v.CancelChildren} {
			for _, id := range ids {
				if id <= 0 {
					t.Fatalf("%s: accepted task id %d", body, id)
				}
			}
		}
		for _, id := range v.AddDependsOn {
			if slices.Contains(v.RemoveDependsOn, id) {
				t.Fatalf("%s: accepted %d in both add_depends_on and remove_depends_on", body, id)
			}
		}
		for i, c := range v.AddChildren {
			if c.ParentID != nil {
				t.Fatalf("%s: child %d keeps parent_id %d", body, i, *c.ParentID)
			}
			checkValidTask(t, body, p.AddChildren[i], c)
		}
		again, err := v.Validate()
		if err != nil || !reflect.DeepEqual(again, v) {
			t.Fatalf("%s: Validate is not idempotent: %+v → %+v, %v", body, v, again, err)
		}
		fs := v.Fields()
		isMaterial := slices.ContainsFunc(fs, func(f string) bool { return slices.Contains(material, f) })
		if len(fs) == 0 || isMaterial != v.Material() {
			t.Fatalf("%s: Fields %v, Material %t disagree", body, fs, v.Material())
		}
		for _, f := range fs {
			if !slices.Contains(patchFields, f) {
				t.Fatalf("%s: Fields names %q, no field of a patch", body, f)
			}
		}
	})
}
