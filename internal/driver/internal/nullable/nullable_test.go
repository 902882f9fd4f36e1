package nullable

import "testing"

func TestRoundTrip(t *testing.T) {
	if String("") != nil || Int(0) != nil {
		t.Fatal("a zero value is not NULL")
	}
	if got := Deref(String("a")); got != "a" {
		t.Fatalf("Deref(String(a)) = %q", got)
	}
	if got := Deref(Int(7)); got != 7 {
		t.Fatalf("Deref(Int(7)) = %d", got)
	}
	if Deref[string](nil) != "" || Deref[int64](nil) != 0 {
		t.Fatal("NULL does not read as the zero value")
	}
}

func TestJSONText(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want string
	}{{nil, "{}"}, {[]byte{}, "{}"}, {[]byte(`{"a":1}`), `{"a":1}`}, {[]byte(`[]`), `[]`}} {
		if got := JSONText(c.in); got != c.want {
			t.Errorf("JSONText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
