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
		return &arrayPlan[time.Time, timeArray]{}, timeArray(v), true
	case []string:
		return &arrayPlan[string, textArray]{}, textArray(v), true
	case []int64:
		return &arrayPlan[int64, int8Array]{}, int8Array(v), true
	case []int32:
		return &arrayPlan[int32, int4Array]{}, int4Array(v), true
	}
	return nil, nil, false
}

// arrayPlan converts a []E to its wrapper A and encodes that.
type arrayPlan[E any, A ~[]E] struct{ next pgtype.EncodePlan }

func (p *arrayPlan[E, A]) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *arrayPlan[E, A]) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(A(value.([]E)), buf)
}

// dims are the dimensions pgtype.FlatArray gives a slice of n elements
// (nil for a nil slice: NULL).
func dims(isNil bool, n int) []pgtype.ArrayDimension {
	if isNil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

// timeArray is a []time.Time for pgx: timestamptz elements.
type timeArray []time.Time

// timeElem is one element of a timeArray, encoded as pgx encodes a
// time.Time.
type timeElem time.Time

func (e *timeElem) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: time.Time(*e), Valid: true}, nil
}

func (a timeArray) Dimensions() []pgtype.ArrayDimension { return dims(a == nil, len(a)) }
func (a timeArray) Index(i int) any                     { return (*timeElem)(&a[i]) }
func (a timeArray) IndexType() any                      { return new(timeElem) }

// textArray is a []string for pgx: text elements.
type textArray []string

// textElem is one element of a textArray.
type textElem string

func (e *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*e), Valid: true}, nil
}

func (a textArray) Dimensions() []pgtype.ArrayDimension { return dims(a == nil, len(a)) }
func (a textArray) Index(i int) any                     { return (*textElem)(&a[i]) }
func (a textArray) IndexType() any                      { return new(textElem) }

// int8Array is a []int64 for pgx: bigint elements.
type int8Array []int64

// int8Elem is one element of an int8Array.
type int8Elem int64

func (e *int8Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*e), Valid: true}, nil
}

func (a int8Array) Dimensions() []pgtype.ArrayDimension { return dims(a == nil, len(a)) }
func (a int8Array) Index(i int) any                     { return (*int8Elem)(&a[i]) }
func (a int8Array) IndexType() any                      { return new(int8Elem) }

// int4Array is a []int32 for pgx: int elements.
type int4Array []int32

// int4Elem is one element of an int4Array.
type int4Elem int32

func (e *int4Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*e), Valid: true}, nil
}

func (a int4Array) Dimensions() []pgtype.ArrayDimension { return dims(a == nil, len(a)) }
func (a int4Array) Index(i int) any                     { return (*int4Elem)(&a[i]) }
func (a int4Array) IndexType() any                      { return new(int4Elem) }
