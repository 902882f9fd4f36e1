package driver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
)

// leaseTokenBytes is the randomness of a lease token.
const leaseTokenBytes = 16

// NewLeaseToken returns a fresh random lease token (hex, 128 bits).
func NewLeaseToken() string {
	b := make([]byte, leaseTokenBytes)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (it aborts the program instead)
	return hex.EncodeToString(b)
}

// HashLeaseToken returns the stored form of a lease token: its SHA-256, hex
// (as bearer tokens are stored). Fenced calls compare hashes, so a database
// read, a backup or a log of the table yields no usable token.
func HashLeaseToken(token string) string {
	h := hashLeaseToken(token)
	return string(h[:])
}

// LeaseTokenHashes reports whether hash is HashLeaseToken(token), without
// allocating: every fenced call (each completion, each heartbeat) checks
// its token so.
func LeaseTokenHashes(hash, token string) bool {
	h := hashLeaseToken(token)
	return string(h[:]) == hash
}

// hashLeaseToken is HashLeaseToken's hex digits.
func hashLeaseToken(token string) [2 * sha256.Size]byte {
	var h [2 * sha256.Size]byte
	sum := sha256.Sum256([]byte(token))
	hex.Encode(h[:], sum[:])
	return h
}

// AgentTokenHash returns the stored form of the secret of a task's agent
// credential issued with the lease whose token hashes to leaseTokenHash:
// the SHA-256 (hex) of both. Binding the lease in makes the credential end
// with the lease without another write: once the task's lease token hash
// changes or is cleared, the stored hash no longer matches
// (AgentTokenHashes), however the lease ended.
func AgentTokenHash(secret, leaseTokenHash string) string {
	return HashLeaseToken(leaseTokenHash + ":" + secret)
}

// AgentTokenHashes reports whether hash is AgentTokenHash(secret,
// leaseTokenHash) of a lease that is held (leaseTokenHash not empty), in
// constant time.
func AgentTokenHashes(hash, secret, leaseTokenHash string) bool {
	if hash == "" || leaseTokenHash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hash), []byte(AgentTokenHash(secret, leaseTokenHash))) == 1
}
