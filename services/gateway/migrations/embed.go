// Package migrations embeds the gateway schema's SQL migrations (goose format).
package migrations

import "embed"

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS
