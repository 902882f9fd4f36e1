package ops

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
)

// ClientClosedRequest is the status of a call whose caller went away.
const ClientClosedRequest = 499

// FailureOf maps an error of a call (or of decoding its input) to what the
// surfaces report. A storage fault and an unexpected error say nothing of
// their details (file paths, hosts, SQL): those go to log, with what, the
// call that failed. A call ended because ctx ended (the caller went away)
// is logged at debug.
func FailureOf(ctx context.Context, log *slog.Logger, what string, err error) cks.Error {
	if log == nil {
		log = slog.Default()
	}
	var fe *cks.FieldError
	fail := func(status int, code string) cks.Error {
		return cks.Error{Status: status, Code: code, Message: err.Error()}
	}
	switch {
	case errors.As(err, &fe):
		f := fail(http.StatusBadRequest, cks.CodeInvalidArgument)
		f.Field = fe.Field
		return f
	case errors.Is(err, cks.ErrInvalid):
		return fail(http.StatusBadRequest, cks.CodeInvalidArgument)
	case errors.Is(err, sweeper.ErrDisabledByConfig):
		return fail(http.StatusConflict, cks.CodeDisabledByConfig)
	case errors.Is(err, cks.ErrLeaseLost):
		return fail(http.StatusConflict, cks.CodeLeaseLost)
	case errors.Is(err, cks.ErrNotFound), errors.Is(err, sweeper.ErrUnknownSweeper):
		return fail(http.StatusNotFound, cks.CodeNotFound)
	case errors.Is(err, cks.ErrConflict):
		return fail(http.StatusConflict, cks.CodeConflict)
	case errors.Is(err, auth.ErrUnauthenticated):
		return fail(http.StatusUnauthorized, cks.CodeUnauthenticated)
	case errors.Is(err, auth.ErrForbidden):
		return fail(http.StatusForbidden, cks.CodeForbidden)
	case errors.Is(err, cks.ErrStorageUnreachable):
		// The database could not be reached (a Postgres restart): the
		// request may be sent again once it is back, in seconds.
		log.Error("storage unreachable", "call", what, "err", err)
		return cks.Error{Status: http.StatusServiceUnavailable, Code: cks.CodeStorageUnavailable,
			Message: "the hub's database is unavailable (it cannot be reached); try again shortly (see the hub log)"}
	case errors.Is(err, cks.ErrUnavailable):
		// The storage's failure, not the request's: nothing was written,
		// and the same request may succeed once the storage is fixed.
		code, state := StorageState(err)
		log.Error("storage fault", "call", what, "storage", code, "err", err)
		return cks.Error{Status: http.StatusServiceUnavailable, Code: "storage_" + code,
			Message: "the hub's database " + state + "; nothing was written (see the hub log)"}
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The caller went away (e.g. during a stop's abort wait): not a
		// failure of the hub. The answer goes nowhere.
		log.Debug("call abandoned by its caller", "call", what, "err", err)
		return fail(ClientClosedRequest, cks.CodeClientClosedRequest)
	}
	log.Error("call failed", "call", what, "err", err)
	return cks.Error{Status: http.StatusInternalServerError, Code: cks.CodeInternal, Message: "internal error; see the hub log"}
}

// StorageRetryAfter is the Retry-After of an answer 503 for the storage:
// a Postgres restart is over in seconds.
const StorageRetryAfter = 5 * time.Second

// StorageState names a storage fault for codes (storage_CODE, /healthz's
// storage) and says what it is.
func StorageState(err error) (code, what string) {
	switch {
	case errors.Is(err, cks.ErrStorageReadOnly):
		return "read_only", "refuses writes (it is read-only)"
	case errors.Is(err, cks.ErrStorageFull):
		return "full", "has no space left for writes"
	case errors.Is(err, cks.ErrStorageUnreachable):
		return "unavailable", "cannot be reached"
	case errors.Is(err, cks.ErrUnavailable):
		return "unavailable", "cannot take requests"
	}
	return "error", "could not be checked"
}
