package driver

import (
	"crypto/rand"
	"crypto/sha256"
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
