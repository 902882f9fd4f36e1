package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The bulk statements pass a column per parameter, as an array (unnest),
// and pgx encodes a Go slice through pgtype.FlatArray, whose Index returns
// each element boxed in an interface: one allocation per time, string or
// int64 of every array (and one more per time, wrapped again to be
// encoded). On the hot path that was most of the client's allocations
// (claims and completions, 4 time arrays and 8 text arrays a move; issue
// 27). The wrappers below hand pgx the same arrays through elements that
// are pointers into the slice, which box without allocating, and that
// give their value through pgx's own valuer interfaces: the bytes sent are
// those FlatArray's would be (the same codecs encode them; a nil slice is
// still NULL).

// registerArrays puts the wrappers first among conn's encode wrappers, so
// they are tried before pgx's generic slice wrapper.
func registerArrays(_ context.Context, conn *pgx.Conn) error {
	m := conn.TypeMap()
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{wrapArray}, m.TryWrapEncodePlanFuncs...)
	return nil
}

// wrapArray is the pgtype.TryWrapEncodePlanFunc of the slices the queries
// pass: []time.Time, []string, []int64 and []int32.
func wrapArray(value any) (plan pgtype.WrappedEncodePlanNextSetter, nextValue any, ok bool) {
	switch v := value.(type) {
	case []time.Time:
		return wrapped(v, func(e *time.Time) any { return (*timeElem)(e) })
	case []string:
		return wrapped(v, func(e *string) any { return (*textElem)(e) })
	case []int64:
		return wrapped(v, func(e *int64) any { return (*int8Elem)(e) })
	case []int32:
		return wrapped(v, func(e *int32) any { return (*int4Elem)(e) })
	}
	return nil, nil, false
}

// wrapped is wrapArray's answer for s, whose elements elem presents to pgx.
func wrapped[E any](s []E, elem func(*E) any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	return &arrayPlan[E]{elem: elem}, array[E]{s: s, elem: elem}, true
}

// arrayPlan encodes a []E as its array.
type arrayPlan[E any] struct {
	next pgtype.EncodePlan
	elem func(*E) any
}

func (p *arrayPlan[E]) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *arrayPlan[E]) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(array[E]{s: value.([]E), elem: p.elem}, buf)
}

// array is a slice for pgx (a pgtype.ArrayGetter) whose elements are
// pointers into it, of the type elem converts them to: a pointer boxes
// without allocating.
type array[E any] struct {
	s    []E
	elem func(*E) any
}

// Dimensions are those pgtype.FlatArray gives the slice (nil for a nil
// slice: NULL).
func (a array[E]) Dimensions() []pgtype.ArrayDimension {
	if a.s == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a.s)), LowerBound: 1}}
}

func (a array[E]) Index(i int) any { return a.elem(&a.s[i]) }

func (a array[E]) IndexType() any { return a.elem(new(E)) }

// The elements, each encoded as pgx encodes the Go value it points to,
// through pgx's valuer interfaces.
type (
	timeElem time.Time
	textElem string
	int8Elem int64
	int4Elem int32
)

func (e *timeElem) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: time.Time(*e), Valid: true}, nil
}

func (e *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}

func (e *int8Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*e), Valid: true}, nil
}

func (e *int4Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*e), Valid: true}, nil
}
