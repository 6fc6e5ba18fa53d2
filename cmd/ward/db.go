package main

import (
	"database/sql"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dburl"
)

// openDB opens a database URL (see package dburl); a bad URL is a usage
// error.
func openDB(url string) (*sql.DB, field.Dialect, error) {
	db, d, err := dburl.Open(url)
	if err != nil {
		return nil, 0, usage(err, "use postgres://… or sqlite:PATH")
	}
	return db, d, nil
}

func redactURL(u string) string { return dburl.Redact(u) }
