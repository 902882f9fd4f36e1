package store

import "github.com/cks-dev/cks"

// What text and JSON the store accepts, on every backend, is the rule of
// package cks (cks.ValidateText, cks.ValidateJSON): the types' own
// validation uses it, and so does every store write.

// ValidateText is cks.ValidateText.
func ValidateText(field, s string) error { return cks.ValidateText(field, s) }

// ValidateTexts is cks.ValidateTexts.
func ValidateTexts(field string, ss []string) error { return cks.ValidateTexts(field, ss) }

// ValidateJSON is cks.ValidateJSON.
func ValidateJSON(field string, b []byte) error { return cks.ValidateJSON(field, b) }

// ToText is cks.ToText.
func ToText(s string) string { return cks.ToText(s) }
