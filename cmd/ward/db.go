package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wardlab/ward/internal/cli"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field"
)

// connectTimeout bounds the first contact with a database server.
const connectTimeout = 10 * time.Second

// openDB opens an existing database (ward never creates one) and checks
// that it answers, so that a wrong URL, a missing file or an unreachable
// server is said first, and as such. A bad URL is a usage error.
func openDB(url string) (*sql.DB, field.Dialect, error) {
	u, err := dburl.Parse(url)
	if err != nil {
		return nil, 0, cli.Usage(err, "use sqlite:PATH, postgres://USER@HOST/DB (password in PGPASSWORD) or a key=value DSN (host=… user=… dbname=…)")
	}
	db, err := u.Open()
	if errors.Is(err, dburl.ErrNoDatabase) {
		return nil, 0, cli.Usage(err, "check the path: ward opens existing databases only, and created nothing")
	}
	if err != nil {
		return nil, 0, err
	}
	d, err := field.ParseDialect(u.Driver)
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, 0, cli.Failed(fmt.Errorf("cannot connect to %s: %w", dburl.Redact(url), err),
			"is the server running and reachable, and are the host, port, user and password right?")
	}
	return db, d, nil
}
