package postgres

// The queries' Go is generated: schema.sql from driver/schema's table list,
// then sqlc (built from the tools module, so the product's go.mod does not
// carry it) from the .sql files in internal/dbsqlc. scripts/test checks that
// running this leaves the tree unchanged.

//go:generate go run ../internal/schemasql -dialect postgres -out internal/dbsqlc/schema.sql
//go:generate go tool -modfile=../../tools/go.mod sqlc generate -f internal/dbsqlc/sqlc.yaml
