package auth

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// taskTokenPrefix starts a task's agent token, "ckt_<task id>_<secret>":
// the credential claim_tasks hands out with each lease (agent_tokens), for
// whatever the executor runs to work that task with. It has no principal
// row: the claim wrote the secret's hash on the task's row, bound to the
// lease (driver.AgentTokenHash), so issuing one costs no write of its own
// and it stops authenticating in the transaction that ends the lease.
const taskTokenPrefix = "ckt_"

// taskSecretLen is the length of a task token's secret: the hex of a
// lease token's randomness (driver.NewLeaseToken makes both).
const taskSecretLen = 32

// TaskToken returns the agent token of task id whose credential secret
// its claim made (ledger.ClaimParams.AgentToken).
func TaskToken(id int64, secret string) string {
	return taskTokenPrefix + strconv.FormatInt(id, 10) + "_" + secret
}

// parseTaskToken splits a task token into its task and secret; ok is false
// when tok is not one as TaskToken writes it (wrong prefix, no positive id
// in canonical decimal, or a secret that is not taskSecretLen hex digits).
func parseTaskToken(tok string) (id int64, secret string, ok bool) {
	rest, ok := strings.CutPrefix(tok, taskTokenPrefix)
	if !ok {
		return 0, "", false
	}
	ids, secret, ok := strings.Cut(rest, "_")
	id, err := strconv.ParseInt(ids, 10, 64)
	if !ok || err != nil || id <= 0 || len(secret) != taskSecretLen || TaskToken(id, secret) != tok {
		return 0, "", false
	}
	if _, err := hex.DecodeString(secret); err != nil {
		return 0, "", false
	}
	return id, secret, true
}

// taskAuth authenticates the agent token of task id with secret: its
// principal ("task/ID", named after the task and its claimer, bound to the
// lease) and TaskTokenGrants, while the lease it was issued with is the
// task's current one. It reads the task's row every time (one read by
// primary key; never cached, as a lease may end at any moment); an unknown
// task, a secret that does not match or a lease that ended is
// cks.ErrNotFound.
func (s *Service) taskAuth(ctx context.Context, id int64, secret string) (cks.Principal, []cks.Grant, error) {
	r, err := s.db.Executor().PrincipalTaskCredential(ctx, id)
	if err == nil && !driver.AgentTokenHashes(r.AgentTokenHash, secret, r.LeaseTokenHash) {
		err = driver.ErrNoRows
	}
	if errors.Is(err, driver.ErrNoRows) {
		return cks.Principal{}, nil, fmt.Errorf("task token: %w", cks.ErrNotFound)
	}
	if err != nil {
		return cks.Principal{}, nil, fmt.Errorf("task token of task %d: %w", id, err)
	}
	name := taskPrincipalPrefix + strconv.FormatInt(id, 10)
	p := cks.Principal{ID: name, Name: strings.TrimSpace(name + " " + r.ClaimedBy), CreatedAt: r.ClaimedAt,
		Lease: &cks.LeaseBinding{TaskID: id, LeaseTokenHash: r.LeaseTokenHash}}
	return p, TaskTokenGrants(id), nil
}

// taskPrincipalPrefix starts the id of a task token's principal, "task/ID"
// (a row's id is a UUID, so the two never meet).
const taskPrincipalPrefix = "task/"

// taskPrincipal reports the task of a task token's principal id.
func taskPrincipal(principalID string) (int64, bool) {
	ids, ok := strings.CutPrefix(principalID, taskPrincipalPrefix)
	id, err := strconv.ParseInt(ids, 10, 64)
	return id, ok && err == nil && id > 0
}
