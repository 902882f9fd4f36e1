package sqlite

// The queries' Go is generated: schema.sql from internal/driver/schema's table list,
// then sqlc (built from the tools module, so the product's go.mod does not
// carry it) from the .sql files in internal/dbsqlc, then generated.sum of
// what went in and came out, which scripts/test checks (dbgen check) without
// building sqlc. Last, executor_gen.go: the primitives and the mapping of
// rows and params that follow from the queries' types (dbgen adapt).

//go:generate go run ../internal/dbgen schema -dialect sqlite -out internal/dbsqlc/schema.sql
//go:generate go tool -modfile=../../../tools/go.mod sqlc generate -f internal/dbsqlc/sqlc.yaml
//go:generate go run ../internal/dbgen sum -dir internal/dbsqlc
//go:generate go run ../internal/dbgen adapt
