package cks

import (
	"fmt"
	"regexp"
)

// A task type is a name a producer and its workers agree on, compared byte
// for byte: "build" and "build " are two types, and a task of the second
// waits for a worker that never comes. So a type is held to a character
// set that cannot hide such a difference: letters, digits and _ - . : /
// (for names such as research:deep or repo/build), starting with a letter
// or a digit, at most MaxTaskTypeLen bytes. Tasks stored before the rule
// keep their types; listing and counting by a type take any text, so
// they stay findable.
const (
	// MaxTaskTypeLen bounds a task type.
	MaxTaskTypeLen = 100
	// TaskTypePattern is the rule of a task type, as the input schemas
	// state it.
	TaskTypePattern = `^[A-Za-z0-9][A-Za-z0-9_.:/-]*$`
)

var taskTypeRE = regexp.MustCompile(TaskTypePattern)

// ExpectedTaskType is what a refused task type was expected to be.
var ExpectedTaskType = fmt.Sprintf("a task type: letters, digits and _ - . : / (starting with a letter or digit, at most %d bytes)", MaxTaskTypeLen)

// ValidateTaskType reports a FieldError naming field unless s is a task
// type (TaskTypePattern, at most MaxTaskTypeLen bytes). It is the rule of
// every type a task is created with or a worker claims.
func ValidateTaskType(field, s string) error {
	return validateName(field, s, taskTypeRE, MaxTaskTypeLen, ExpectedTaskType)
}

// validateName reports a FieldError naming field unless s is text every
// store takes, of at most maxLen bytes, that re matches.
func validateName(field, s string, re *regexp.Regexp, maxLen int, expected string) error {
	if err := ValidateText(field, s); err != nil {
		return err // what text every store takes, said as for every field
	}
	if len(s) <= maxLen && re.MatchString(s) {
		return nil
	}
	got := fmt.Sprintf("%q", s)
	if len(s) > maxLen {
		got = fmt.Sprintf("%d bytes", len(s))
	}
	return fieldError(field, expected+", got "+got)
}

// A process kind names what a process is (critic, summarizer) and is
// one segment of the paths that name it (/v1/processes/KIND): a task
// type's character set without "/".
const (
	// MaxProcessKindLen bounds a process kind.
	MaxProcessKindLen = 100
	// ProcessKindPattern is the rule of a process kind, as the input
	// schemas state it.
	ProcessKindPattern = `^[A-Za-z0-9][A-Za-z0-9_.:-]*$`
)

var processKindRE = regexp.MustCompile(ProcessKindPattern)

// ExpectedProcessKind is what a refused process kind was expected to be.
var ExpectedProcessKind = fmt.Sprintf("a process kind: letters, digits and _ - . : (starting with a letter or digit, at most %d bytes)", MaxProcessKindLen)

// ValidateProcessKind reports a FieldError naming field unless s is a
// process kind (ProcessKindPattern, at most MaxProcessKindLen bytes). An
// instance id is held to it too: a UUID is one.
func ValidateProcessKind(field, s string) error {
	return validateName(field, s, processKindRE, MaxProcessKindLen, ExpectedProcessKind)
}

// ValidateTaskTypes is ValidateTaskType of every type of types, naming
// field and the item it refuses, as every list of texts is refused.
func ValidateTaskTypes(field string, types []string) error {
	for i, t := range types {
		if err := ValidateTaskType(field, t); err != nil {
			fe := err.(*FieldError)
			fe.Expected += fmt.Sprintf(" (item %d)", i)
			return fe
		}
	}
	return nil
}

// ExpectedInstanceID is what a refused process instance id was expected
// to be.
var ExpectedInstanceID = fmt.Sprintf("a process instance id such as a UUID: letters, digits and _ - . : (starting with a letter or digit, at most %d bytes)", MaxProcessKindLen)

// ValidateInstanceID reports a FieldError naming field unless s can be
// the id of a process instance: a process kind's character set, as a
// UUID is written.
func ValidateInstanceID(field, s string) error {
	return validateName(field, s, processKindRE, MaxProcessKindLen, ExpectedInstanceID)
}
