package sweeper

import (
	"encoding/json"
	"slices"
)

// Detail is one item of a sweeper's Details, for display: the key and its
// value as compact JSON.
type Detail struct {
	Key   string
	Value string
}

// DetailList flattens details (Status.Details) into its top-level items,
// sorted by key, for the CLI and the studio. Details that are not a JSON
// object come back as one item with an empty key; nil gives nil.
func DetailList(details any) []Detail {
	if details == nil {
		return nil
	}
	b, err := json.Marshal(details)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return []Detail{{Value: string(b)}}
	}
	out := make([]Detail, 0, len(m))
	for k, v := range m {
		out = append(out, Detail{Key: k, Value: string(v)})
	}
	slices.SortFunc(out, func(a, b Detail) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return out
}
