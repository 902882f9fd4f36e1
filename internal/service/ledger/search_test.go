package ledger_test

import (
	"context"
	"slices"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// TestTextFilterFoldsCase (both backends): list_tasks' and count_tasks' q
// match letters of any script whatever their case, by cks.SearchKey's
// rule — Ärger/ärger, ΣΊΣΥΦΟΣ/σίσυφος (final sigma as σ), in the title,
// the description or the criteria, in every state (the one-state
// listings and counts SQLite reads from idx_outbox_tasks_state too) —
// and nothing beyond it: ß is not ss, accents stay. Until SQLite folded
// non-ASCII letters (cks_fold), only "Ärger" found "Ärger" there, and
// Postgres folded them only under a database locale that did.
func TestTextFilterFoldsCase(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		ctx := context.Background()
		s := open(t)
		ärger := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t", Title: "Ärger im Büro"})
		sisyphus := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t", Description: "der Mythos des ΣΊΣΥΦΟΣ"})
		strasse := backendtest.MustEnqueue(t, s, cks.NewTask{Type: "t", AcceptanceCriteria: "die Straße ist frei"})
		if _, err := s.Tasks.StopTask(ctx, ledger.StopParams{ID: sisyphus.ID, Actor: "op", Reason: "hold"}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			q    string
			want []int64
		}{
			{"ärger", []int64{ärger.ID}},
			{"ÄRGER", []int64{ärger.ID}},
			{"Ärger", []int64{ärger.ID}},
			{"im büro", []int64{ärger.ID}},
			{"σίσυφος", []int64{sisyphus.ID}},
			{"Σίσυφος", []int64{sisyphus.ID}},
			{"ΣΊΣ", []int64{sisyphus.ID}}, // the fold is per character: ς and σ alike
			{"sisyphos", nil},             // no transliteration
			{"σισυφος", nil},              // accents stay
			{"STRAßE", []int64{strasse.ID}},
			{"strasse", nil}, // ß is not ss
		} {
			for _, states := range [][]cks.TaskState{nil, {cks.TaskOpen}, {cks.TaskStopped}} {
				page, err := s.Tasks.ListTasks(ctx, cks.TaskFilter{Text: c.q, States: states})
				if err != nil {
					t.Fatal(err)
				}
				var got, want []int64
				for _, tk := range page.Tasks {
					got = append(got, tk.ID)
				}
				for _, id := range c.want {
					tk := backendtest.MustGet(t, s, id)
					if len(states) == 0 || slices.Contains(states, tk.State) {
						want = append(want, id)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("q %q in %v: tasks %v, want %v", c.q, states, got, want)
				}
				n, err := s.Tasks.CountTasks(ctx, cks.TaskFilter{Text: c.q, States: states})
				if err != nil || n != len(want) {
					t.Errorf("q %q in %v: count %d, %v; want %d", c.q, states, n, err, len(want))
				}
				byState, err := s.Tasks.CountTasksByState(ctx, cks.TaskFilter{Text: c.q, States: states})
				if err != nil || byState.Total != len(want) {
					t.Errorf("q %q in %v: counts by state %v, %v; want a total of %d", c.q, states, byState, err, len(want))
				}
			}
		}
	})
}
