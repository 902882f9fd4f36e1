package notifier

import "github.com/cks-dev/cks"

// validateTopics reports a FieldError naming topics when topics is empty or
// holds an empty topic, and returns the set of distinct topics.
func validateTopics(topics []string) (map[string]bool, error) {
	if len(topics) == 0 {
		return nil, &cks.FieldError{Field: "topics", Expected: "at least one change topic"}
	}
	set := make(map[string]bool, len(topics))
	for _, t := range topics {
		if t == "" {
			return nil, &cks.FieldError{Field: "topics", Expected: "non-empty change topics"}
		}
		if err := cks.ValidateText("topics", t); err != nil {
			return nil, err
		}
		set[t] = true
	}
	return set, nil
}
