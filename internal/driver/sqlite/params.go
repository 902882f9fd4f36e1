package sqlite

import (
	"encoding/json"
	"fmt"
)

// jsonList renders a list parameter as the JSON array the queries read
// with json_each(CAST(@list AS TEXT)); an empty or nil list is [].
func jsonList[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Lists are of ids and states: they always marshal.
		panic(fmt.Sprintf("sqlite: list parameter %v: %v", v, err))
	}
	return string(b)
}
