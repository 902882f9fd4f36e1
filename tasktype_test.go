package cks

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTaskType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // a part of the refusal; "" accepts
	}{
		{"build", ""},
		{"research:deep", ""},
		{"repo/build-2.v1_x", ""},
		{"0day", ""},
		{strings.Repeat("x", MaxTaskTypeLen), ""},
		{"", `got ""`},
		{"build ", `got "build "`},
		{" build", `got " build"`},
		{"build\t", `got "build\t"`},
		{"two words", `got "two words"`},
		{"-flag", `got "-flag"`},
		{"émoji", `got "émoji"`},
		{strings.Repeat("x", MaxTaskTypeLen+1), "got 101 bytes"},
		{"nul\x00", "NUL"},
	} {
		err := ValidateTaskType("type", tc.in)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v, want accepted", tc.in, err)
			}
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "type" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a FieldError naming type saying %s", tc.in, err, tc.want)
		}
	}
	err := ValidateTaskTypes("types", []string{"a", "b "})
	if err == nil || !strings.Contains(err.Error(), "(item 1)") {
		t.Errorf("ValidateTaskTypes: %v, want item 1 refused", err)
	}
	if _, err := (NewTask{Type: "build "}).Validate(); err == nil {
		t.Error(`NewTask{Type: "build "}.Validate() took a type with a trailing space`)
	}
}
