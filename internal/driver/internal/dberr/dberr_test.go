package dberr

import (
	"errors"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

func TestMap(t *testing.T) {
	dbErr := errors.New("the database's own error")
	for _, c := range []struct {
		name    string
		err     error
		kind    Kind
		want    []error
		notWant []error
		keeps   bool // the database's error stays in the chain
	}{
		{"NoRows", dbErr, NoRows, []error{driver.ErrNoRows}, []error{cks.ErrUnavailable}, false},
		{"Unique", dbErr, Unique, []error{driver.ErrUniqueViolation}, []error{cks.ErrUnavailable}, true},
		{"ReadOnly", dbErr, ReadOnly, []error{cks.ErrStorageReadOnly, cks.ErrUnavailable}, []error{cks.ErrStorageFull}, true},
		{"Full", dbErr, Full, []error{cks.ErrStorageFull, cks.ErrUnavailable}, []error{cks.ErrStorageReadOnly}, true},
		{"Other", dbErr, Other, nil, []error{cks.ErrUnavailable, driver.ErrNoRows}, true},
		// Mapped twice (a step's error passed on by the transaction), the
		// fault stays what it was.
		{"MappedAlready", Map("d", "inner", dbErr, Full), ReadOnly, []error{cks.ErrStorageFull}, []error{cks.ErrStorageReadOnly}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Map("d", "step", c.err, c.kind)
			for _, w := range c.want {
				if !errors.Is(got, w) {
					t.Errorf("Map = %v, want it to match %v", got, w)
				}
			}
			for _, n := range c.notWant {
				if errors.Is(got, n) {
					t.Errorf("Map = %v, matches %v", got, n)
				}
			}
			if c.keeps != errors.Is(got, dbErr) {
				t.Errorf("Map = %v: keeps the database's error: %v, want %v", got, !c.keeps, c.keeps)
			}
			if !strings.Contains(got.Error(), "d: step: ") {
				t.Errorf("Map = %q, want it to name the dialect and the step", got)
			}
		})
	}
	if Map("d", "step", nil, Unique) != nil {
		t.Error("Map(nil) is not nil")
	}
}
