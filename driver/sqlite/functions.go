package sqlite

import (
	"database/sql/driver"
	"fmt"

	"github.com/cks-dev/cks/store"
	"modernc.org/sqlite"
)

// SQLite has no SHA-256, and the upgrade of a database that held plain lease
// tokens needs one (upgrade/retire). The function is the driver's, registered
// with modernc's driver as database/sql drivers register themselves: once,
// for every connection opened afterwards.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("cks_sha256_hex", 1,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			s, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("cks_sha256_hex: expected text, got %T", args[0])
			}
			return store.HashLeaseToken(s), nil
		})
}
