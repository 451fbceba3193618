// Package migrations holds the versioned MySQL/MariaDB schema of the order
// store as goose SQL files. They are embedded so every binary carries the
// schema it was built against and applies it itself (see orderdb.Open);
// there is no separate migration step to forget during a deploy.
//
// Add changes as new files (00002_xxx.sql, ...); never edit an applied one,
// because goose records versions, not contents.
package migrations

import "embed"

// FS contains the goose migration files at its root, ready for
// goose.NewProvider(goose.DialectMySQL, db, migrations.FS).
//
//go:embed *.sql
var FS embed.FS
