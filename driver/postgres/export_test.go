package postgres

// PoolConns returns how many connections d's pool holds.
func PoolConns(d *Driver) int32 { return d.pool.Stat().TotalConns() }
