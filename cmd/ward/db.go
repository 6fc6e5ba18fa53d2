package main

import (
	"database/sql"

	"github.com/wardlab/ward/internal/cli"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dburl"
)

// openDB opens a database URL (see package dburl); a bad URL is a usage
// error.
func openDB(url string) (*sql.DB, field.Dialect, error) {
	db, driver, err := dburl.Open(url)
	if err != nil {
		return nil, 0, cli.Usage(err, "use postgres://USER@HOST/DB (password in $WARD_DB or PGPASSWORD) or sqlite:PATH")
	}
	d, err := field.ParseDialect(driver)
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, d, nil
}
