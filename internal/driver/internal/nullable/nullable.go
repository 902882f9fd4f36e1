// Package nullable maps the driver's zero values to the NULLs of the
// generated queries and back, alike in every dialect: "" and 0 are NULL in
// the nullable columns (a task's current type, a liveness row's task), and a
// NULL reads back as the zero value.
package nullable

// String maps "" to NULL.
func String(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Int maps 0 to NULL.
func Int(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// Deref reads a nullable value, NULL as the zero value.
func Deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// JSONText is a JSON column's value as text: an empty one is the empty
// object, the column's default (a NOT NULL JSON column has no NULL).
func JSONText(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}
