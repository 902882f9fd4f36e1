package postgres

// PoolConns returns how many connections d's pool holds.
func PoolConns(d *Driver) int32 { return d.pool.Stat().TotalConns() }

// MapErr is the driver's mapErr, for tests of the errors a test server
// cannot produce (a full disk).
func MapErr(what string, err error) error { return mapErr(what, err) }
