// Package migrations embeds the directory schema's SQL migrations (goose format),
// with its repeatable ones (libs/pg.RepeatablePattern), the shared
// great-circle function among them.
package migrations

import (
	"embed"

	"github.com/coworkjobs/coworkjobs/libs/geo"
	"github.com/coworkjobs/coworkjobs/libs/pg"
)

//go:embed *.sql
var files embed.FS

// FS holds the migration files.
var FS = pg.WithFiles(files, map[string][]byte{geo.SQLFile: geo.SQL})
