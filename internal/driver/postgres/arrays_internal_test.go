package postgres

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// arrayMap is a type map with the array wrappers, as every pool
// connection has them (registerArrays).
func arrayMap() *pgtype.Map {
	m := pgtype.NewMap()
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{wrapArray}, m.TryWrapEncodePlanFuncs...)
	return m
}

// TestArraysEncodeAsBefore: every slice the wrappers take encodes to the
// bytes pgx's own slice encoding gives, in both formats — times in other
// zones and the zero time, text that needs quoting, nil (NULL) and empty
// slices.
func TestArraysEncodeAsBefore(t *testing.T) {
	zone := time.FixedZone("x", -7*3600)
	cases := []struct {
		oid   uint32
		value any
	}{
		{pgtype.TimestamptzArrayOID, []time.Time{time.Date(2026, 12, 3, 15, 4, 5, 123456789, time.UTC),
			time.Date(2026, 12, 3, 8, 4, 5, 999, zone), {}}},
		{pgtype.TimestamptzArrayOID, []time.Time{}},
		{pgtype.TimestamptzArrayOID, []time.Time(nil)},
		{pgtype.TextArrayOID, []string{"", "plain", `a "quoted", {braced} \ value`, "NULL", "ünï"}},
		{pgtype.TextArrayOID, []string{}},
		{pgtype.TextArrayOID, []string(nil)},
		{pgtype.Int8ArrayOID, []int64{0, -1, 1 << 62}},
		{pgtype.Int8ArrayOID, []int64(nil)},
		{pgtype.Int4ArrayOID, []int32{0, -1, 1 << 30}},
		{pgtype.Int4ArrayOID, []int32(nil)},
	}
	plain, wrapped := pgtype.NewMap(), arrayMap()
	for _, c := range cases {
		for _, format := range []int16{pgtype.BinaryFormatCode, pgtype.TextFormatCode} {
			name := fmt.Sprintf("%T%v/format%d", c.value, c.value, format)
			want, err := plain.Encode(c.oid, format, c.value, nil)
			if err != nil {
				t.Fatalf("%s: pgx: %v", name, err)
			}
			got, err := wrapped.Encode(c.oid, format, c.value, nil)
			if err != nil {
				t.Fatalf("%s: wrapped: %v", name, err)
			}
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("%s: wrapped encodes %q, pgx %q", name, got, want)
			}
		}
	}
}

// TestArraysEncodeWithoutElementAllocations: encoding a wrapped array
// allocates no more for 256 elements than for one (pgx's own encoding
// allocates once or twice per element).
func TestArraysEncodeWithoutElementAllocations(t *testing.T) {
	m := arrayMap()
	now := time.Now()
	for _, c := range []struct {
		oid       uint32
		one, many any
	}{
		{pgtype.TimestamptzArrayOID, []time.Time{now}, make([]time.Time, 256)},
		{pgtype.TextArrayOID, []string{"x"}, make([]string, 256)},
		{pgtype.Int8ArrayOID, []int64{1}, make([]int64, 256)},
		{pgtype.Int4ArrayOID, []int32{1}, make([]int32, 256)},
	} {
		buf := make([]byte, 0, 1<<16)
		allocs := func(v any) float64 {
			return testing.AllocsPerRun(50, func() {
				if _, err := m.Encode(c.oid, pgtype.BinaryFormatCode, v, buf[:0]); err != nil {
					t.Fatal(err)
				}
			})
		}
		if one, many := allocs(c.one), allocs(c.many); many > one {
			t.Fatalf("%T: %v allocations for 256 elements, %v for one", c.one, many, one)
		}
	}
}
