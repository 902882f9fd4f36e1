package knowledge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestListObjectsSearch: a list's q keeps the objects whose title or
// content contains it, ASCII letters in either case, with the other
// filters and the cursor; a q no store stores, or over MaxSearchText
// bytes, is a FieldError naming q.
func TestListObjectsSearch(t *testing.T) {
	backendtest.ForEachDriver(t, func(t *testing.T, open backendtest.DriverOpener) {
		k := knowledge.New(open(t), clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		ctx := context.Background()
		var ids []int64
		for _, n := range []knowledge.NewObject{
			{Kind: cks.KindQuestion, Title: "Why is the SKY blue?", Status: cks.StatusAwaitingResearch},
			{Kind: cks.KindClaim, Title: "Rayleigh", Content: []byte(`{"text":"the sky scatters blue light"}`)},
			{Kind: cks.KindQuestion, Title: "How do leases end?", Status: cks.StatusResolved},
		} {
			o, err := k.CreateObject(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, o.ID)
		}
		for _, c := range []struct {
			name string
			f    cks.ObjectFilter
			want []int
		}{
			{"title, any case", cks.ObjectFilter{Text: "sky"}, []int{0, 1}},
			{"upper case", cks.ObjectFilter{Text: "SKY BLUE"}, []int{0}},
			{"content", cks.ObjectFilter{Text: "Scatters Blue"}, []int{1}},
			{"with a kind", cks.ObjectFilter{Text: "sky", Kinds: []string{cks.KindClaim}}, []int{1}},
			{"with a status", cks.ObjectFilter{Text: "?", Statuses: []string{cks.StatusResolved}}, []int{2}},
			{"after the cursor", cks.ObjectFilter{Text: "sky", After: ids[0]}, []int{1}},
			{"a page of one", cks.ObjectFilter{Text: "?", Limit: 1}, []int{0}},
			{"nothing", cks.ObjectFilter{Text: "zebra"}, nil},
		} {
			page, err := k.ListObjects(ctx, c.f)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var got, want []int64
			for _, o := range page.Objects {
				got = append(got, o.ID)
			}
			for _, i := range c.want {
				want = append(want, ids[i])
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: ListObjects(%+v) = %v, want %v", c.name, c.f, got, want)
			}
		}
		for _, q := range []string{strings.Repeat("x", cks.MaxSearchText+1), "bad\x00text"} {
			_, err := k.ListObjects(ctx, cks.ObjectFilter{Text: q})
			var fe *cks.FieldError
			if !errors.As(err, &fe) || fe.Field != "q" {
				t.Errorf("q %s: %v, want a FieldError naming q", fmt.Sprintf("%.12q", q), err)
			}
		}
	})
}
