package postgres

import (
	"context"

	"github.com/cks-dev/cks/internal/driver/internal/scratch"
)

// ScratchSchema creates an empty schema cks_scratch_<random> in the database at
// dbURL and returns a URL whose search_path points at it, and a function that
// drops it with everything in it. Benchmarks and tests use it so they never touch a
// deployment's tables.
func ScratchSchema(ctx context.Context, dbURL string) (string, func(context.Context) error, error) {
	return scratch.Schema(ctx, dbURL)
}
