package cks

import (
	"errors"
	"fmt"
	"strings"
)

// ErrorBody is the shape of every error answer of the HTTP API:
// {"error":{"code":…,"message":…,"field":…}}. Its Error is what an MCP tool
// error says (its text is Message) and what the CLI prints.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is an error as every surface reports it: an HTTP status, a code, a
// message and, for bad input, the offending input field. A client returns
// the hub's error answers as *Error.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the offending input field of an invalid_argument error.
	Field string `json:"field,omitempty"`
}

// Error is the message with the code and the HTTP status, the code said
// once: a message that already says it (`task 1 is already STOPPED:
// conflict`, `storage_full: no space left`, `…: lease lost: conflict` of
// lease_lost) is followed by the status alone.
func (e *Error) Error() string {
	if saysWords(e.Message, e.Code) || saysWords(e.Message, strings.ReplaceAll(e.Code, "_", " ")) {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	}
	return fmt.Sprintf("%s (%s, HTTP %d)", e.Message, e.Code, e.Status)
}

// Is makes an error answer match the sentinel its code stands for, as the
// error the hub answered with did: lease_lost matches ErrLeaseLost (and so
// ErrConflict), conflict ErrConflict, not_found ErrNotFound and
// invalid_argument ErrInvalid. So code written against the ledger's
// errors (an executor's "the lease is gone: stop") reads a client's
// answers alike.
func (e *Error) Is(target error) bool {
	var code error
	switch e.Code {
	case CodeLeaseLost:
		code = ErrLeaseLost
	case CodeConflict:
		code = ErrConflict
	case CodeNotFound:
		code = ErrNotFound
	case CodeInvalidArgument:
		code = ErrInvalid
	default:
		return false
	}
	return errors.Is(code, target)
}

// saysWords reports whether text holds phrase as whole words: not inside
// a longer word ("conflicting" does not say "conflict").
func saysWords(text, phrase string) bool {
	if phrase == "" {
		return false
	}
	word := func(b byte) bool {
		return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(text[i:], phrase)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(phrase)
		if (start == 0 || !word(text[start-1])) && (end == len(text) || !word(text[end])) {
			return true
		}
		i = start + 1
	}
}

// The codes of Error.
const (
	// CodeInvalidArgument: bad input (400); Field names the field when one
	// is to blame (a FieldError).
	CodeInvalidArgument = "invalid_argument"
	// CodeNotFound: no such record, sweeper or endpoint (404).
	CodeNotFound = "not_found"
	// CodeConflict: the call contradicts the record's current state (409).
	CodeConflict = "conflict"
	// CodeLeaseLost: an executor call with a lease that is no longer
	// current (409, ErrLeaseLost).
	CodeLeaseLost = "lease_lost"
	// CodeDisabledByConfig: a sweeper disabled by configuration cannot be
	// started (409).
	CodeDisabledByConfig = "disabled_by_config"
	// CodeUnauthenticated: no valid bearer token (401).
	CodeUnauthenticated = "unauthenticated"
	// CodeForbidden: the caller lacks the operation's permission on its
	// resource (403).
	CodeForbidden = "forbidden"
	// CodeStorageReadOnly, CodeStorageFull and CodeStorageUnavailable: the
	// hub's database could not take the call; nothing was written (503).
	CodeStorageReadOnly    = "storage_read_only"
	CodeStorageFull        = "storage_full"
	CodeStorageUnavailable = "storage_unavailable"
	// CodeClientClosedRequest: the caller went away before the answer (499).
	CodeClientClosedRequest = "client_closed_request"
	// CodeInternal: an unexpected failure of the hub, logged there (500).
	CodeInternal = "internal"
	// CodeCrossOrigin: a browser request from another origin (403).
	CodeCrossOrigin = "cross_origin"
	// CodeUnsupportedMediaType: a body that is not application/json (415).
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeRequestTooLarge: a body over the limit (413).
	CodeRequestTooLarge = "request_too_large"
	// CodeMethodNotAllowed: a method the path does not answer (405, with
	// Allow).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeTooManyConnections: a client address over its connection limit
	// (503).
	CodeTooManyConnections = "too_many_connections"
	// CodeTooManyFailures: a client address that failed to authenticate
	// too often within a window (429, with Retry-After).
	CodeTooManyFailures = "too_many_auth_failures"
	// CodeHTTP is no code of the hub's: a client's name for an error answer
	// without an error body (a proxy's, say), whose text is the Message.
	CodeHTTP = "http"
)
