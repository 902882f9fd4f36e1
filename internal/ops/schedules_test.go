package ops_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// TestScheduleGrants (both backends): the schedules' resources are a tree
// of their own — a token with create on /schedules creates one (its
// creator recorded), with control on /schedules/a pauses a and not b, and
// without read on /schedules lists none; a refused input stores nothing.
func TestScheduleGrants(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		c := clock.NewFake(backendtest.T0)
		s := open(t, driver.WithClock(c))
		svc := &ops.Services{Schedules: s.Schedules, Principals: s.Principals, Clock: c}
		as := func(name string, grants ...cks.Grant) context.Context {
			p, _, err := auth.CreateToken(context.Background(), s.Principals, c, name, grants)
			if err != nil {
				t.Fatal(err)
			}
			return auth.WithPrincipal(context.Background(), s.Principals, p)
		}
		call := func(ctx context.Context, op ops.Operation, args string) (any, error) {
			t.Helper()
			return ops.Call(ctx, svc, op, ops.Request{Args: []byte(args)})
		}
		maker := as("maker", cks.Grant{Resource: auth.ResourceSchedules, Permission: auth.PermCreate})
		for _, name := range []string{"a", "b"} {
			out, err := call(maker, ops.CreateSchedule, `{"name":"`+name+`","cron":"@hourly","task":{"type":"t"}}`)
			if err != nil || out.(cks.Schedule).CreatedBy != "maker" {
				t.Fatalf("create %s: %+v, %v; want created by maker", name, out, err)
			}
		}
		if _, err := call(maker, ops.CreateSchedule, `{"name":"c","cron":"@hourly","time_zone":"Nowhere/Else","task":{"type":"t"}}`); !isField(err, "time_zone") {
			t.Fatalf("create with a bad zone: %v", err)
		}
		if _, err := call(maker, ops.PauseSchedule, `{"name":"a"}`); !errors.Is(err, auth.ErrForbidden) {
			t.Fatalf("pause by a token that may only create: %v", err)
		}
		op := as("op-a", cks.Grant{Resource: "/schedules/a", Permission: auth.PermControl})
		if out, err := call(op, ops.PauseSchedule, `{"name":"a"}`); err != nil || !out.(cks.Schedule).Paused || out.(cks.Schedule).PausedBy != "op-a" {
			t.Fatalf("pause a with control on /schedules/a: %+v, %v", out, err)
		}
		for _, o := range []ops.Operation{ops.PauseSchedule, ops.TriggerSchedule, ops.DeleteSchedule} {
			if _, err := call(op, o, `{"name":"b"}`); !errors.Is(err, auth.ErrForbidden) {
				t.Fatalf("%s b with control on /schedules/a only: %v", o.Spec().Name, err)
			}
		}
		if _, err := call(op, ops.ListSchedules, `{}`); !errors.Is(err, auth.ErrForbidden) {
			t.Fatalf("list without read on /schedules: %v", err)
		}
		list, err := s.Schedules.List(backendtest.Ctx(t))
		if err != nil || len(list) != 2 || !list[0].Paused || list[1].Paused {
			t.Fatalf("after: %+v, %v; want a paused, b running, no c", list, err)
		}
	})
}

func isField(err error, field string) bool {
	fe, ok := errors.AsType[*cks.FieldError](err)
	return ok && fe.Field == field
}
