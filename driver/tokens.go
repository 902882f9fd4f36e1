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
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
