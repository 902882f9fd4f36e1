package ops

import (
	"context"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// The flow-control operations of task types (issue 42): pausing a type
// fleet-wide.

const pauseNote = " A paused type is skipped by every claim of every hub and agent on the database from the pause's commit " +
	"on: its OPEN tasks stay OPEN (run_after and priority kept), CLAIMED and RUNNING attempts finish as they would, and " +
	"creating tasks of the type goes on. The pause is stored, so it holds across restarts until resume_type. " +
	"A type with \"/\" is the resource /types/ followed by the type path-escaped (repo/build: /types/repo%2Fbuild)."

// typeResource is the resource of a type's flow control: /types/TYPE.
func typeResource(typ string) (string, error) {
	if err := cks.ValidateTaskType("type", typ); err != nil {
		return "", err
	}
	return auth.TypeResource(typ), nil
}

// PauseType is pause_type.
var PauseType = define(cks.OpPauseType, &Op[cks.PauseTypeInput, cks.PausedType]{
	spec: Spec{
		Title:   "Pause task type",
		Summary: "pause a task type fleet-wide (persistent)",
		Description: "Pause a task type: no claim hands out a task of it until resume_type. Answers the pause in force: " +
			"type, paused_by (the caller), reason and paused_at; pausing a paused type changes nothing and answers the " +
			"first pause." + pauseNote + " Needs control on /types/TYPE.",
		Permission: auth.PermControl, Resource: auth.ResourceTypes + "/{type}",
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		Hints: Hints{Idempotent: true, Destructive: new(false), OpenWorld: new(false)},
	},
	resource: func(_ context.Context, _ *Services, in *cks.PauseTypeInput) (string, error) {
		return typeResource(in.Type)
	},
	call: func(ctx context.Context, s *Services, in *cks.PauseTypeInput) (cks.PausedType, error) {
		return s.Tasks.PauseType(ctx, ledger.PauseTypeParams{Type: in.Type, Actor: actor(ctx), Reason: in.Reason})
	},
})

// ResumeType is resume_type.
var ResumeType = define(cks.OpResumeType, &Op[cks.TypeInput, cks.TypeResumed]{
	spec: Spec{
		Title:   "Resume task type",
		Summary: "lift a task type's pause",
		Description: "Resume a paused task type: its OPEN tasks are claimable again at once (waiting claims are woken). " +
			"resumed is false when the type was not paused (nothing changed)." + pauseNote + " Needs control on /types/TYPE.",
		Permission: auth.PermControl, Resource: auth.ResourceTypes + "/{type}",
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		// Its effect is idempotent, its answer is not (resumed says
		// whether this call lifted the pause).
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
	},
	resource: func(_ context.Context, _ *Services, in *cks.TypeInput) (string, error) { return typeResource(in.Type) },
	call: func(ctx context.Context, s *Services, in *cks.TypeInput) (cks.TypeResumed, error) {
		return s.Tasks.ResumeType(ctx, in.Type)
	},
})

// ListPausedTypes is list_paused_types.
var ListPausedTypes = define(cks.OpListPausedTypes, &Op[struct{}, cks.PausedTypeList]{
	spec: Spec{
		Title:       "List paused task types",
		Summary:     "the task types paused fleet-wide",
		Description: "List the paused task types, by type, under \"types\": type, paused_by, reason, paused_at." + pauseNote + " Needs read on /types.",
		Permission:  auth.PermRead, Resource: auth.ResourceTypes,
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, _ *struct{}) (cks.PausedTypeList, error) {
		ts, err := s.Tasks.PausedTypes(ctx)
		return cks.PausedTypeList{Types: ts}, err
	},
})
