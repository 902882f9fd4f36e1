package sqlite

import (
	sqldriver "database/sql/driver"
	"fmt"

	"modernc.org/sqlite"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// SQLite has no SHA-256, and the upgrade of a database that held plain lease
// tokens needs one (upgrade/retire). The function is the driver's, registered
// with modernc's driver as database/sql drivers register themselves: once,
// for every connection opened afterwards.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("cks_sha256_hex", 1,
		func(_ *sqlite.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
			s, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("cks_sha256_hex: expected text, got %T", args[0])
			}
			return driver.HashLeaseToken(s), nil
		})
}

// cks_fold is cks.SearchKey, the case folding of the search filters (q):
// the queries match SearchKey(search) within cks_fold(stored text), so
// SQLite folds non-ASCII letters as Postgres's ICU lower does (its own
// lower() folds ASCII alone). NULL folds to NULL.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("cks_fold", 1,
		func(_ *sqlite.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
			switch s := args[0].(type) {
			case nil:
				return nil, nil
			case string:
				return cks.SearchKey(s), nil
			default:
				return nil, fmt.Errorf("cks_fold: expected text, got %T", args[0])
			}
		})
}
