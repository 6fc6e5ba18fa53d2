package sqltable

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// UniqueIndex is a unique index (or UNIQUE / PRIMARY KEY constraint) of a
// table, with its columns.
type UniqueIndex struct {
	Name    string
	Columns []string
}

// UniqueIndexes lists the unique indexes of table (unquoted, as the
// application names it): from pg_index on PostgreSQL, PRAGMA index_list
// on SQLite, information_schema.statistics on MySQL (the current
// database's). engine is field.Dialect's String.
func UniqueIndexes(ctx context.Context, db *sql.DB, engine string, table string) ([]UniqueIndex, error) {
	switch engine {
	case Postgres:
		return pgUnique(ctx, db, table)
	case MySQL:
		return mysqlUnique(ctx, db, table)
	}
	return sqliteUnique(ctx, db, table)
}

func mysqlUnique(ctx context.Context, db *sql.DB, table string) ([]UniqueIndex, error) {
	schema, name := "", table
	if s, n, ok := strings.Cut(table, "."); ok {
		schema, name = s, n
	}
	rows, err := db.QueryContext(ctx, `SELECT index_name, column_name FROM information_schema.statistics
		WHERE table_schema = COALESCE(NULLIF(?, ''), DATABASE()) AND table_name = ? AND non_unique = 0
		ORDER BY index_name, seq_in_index`, schema, name)
	if err != nil {
		return nil, fmt.Errorf("reading the unique indexes of %s: %w", table, err)
	}
	defer rows.Close()
	return collect(rows)
}

func pgUnique(ctx context.Context, db *sql.DB, table string) ([]UniqueIndex, error) {
	rows, err := db.QueryContext(ctx, `SELECT c.relname, a.attname FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indisunique AND i.indrelid = to_regclass($1) ORDER BY c.relname`, `"`+strings.ReplaceAll(table, `"`, `""`)+`"`)
	if err != nil {
		return nil, fmt.Errorf("reading the unique indexes of %s: %w", table, err)
	}
	defer rows.Close()
	return collect(rows)
}

// collect groups (index, column) rows, ordered by index, into indexes.
func collect(rows *sql.Rows) ([]UniqueIndex, error) {
	var out []UniqueIndex
	for rows.Next() {
		var name, col string
		if err := rows.Scan(&name, &col); err != nil {
			return nil, err
		}
		if n := len(out); n > 0 && out[n-1].Name == name {
			out[n-1].Columns = append(out[n-1].Columns, col)
		} else {
			out = append(out, UniqueIndex{Name: name, Columns: []string{col}})
		}
	}
	return out, rows.Err()
}

func sqliteUnique(ctx context.Context, db *sql.DB, table string) ([]UniqueIndex, error) {
	q := func(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_index_list(`+q(table)+`) WHERE "unique"`)
	if err != nil {
		return nil, fmt.Errorf("reading the unique indexes of %s: %w", table, err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	var out []UniqueIndex
	for _, n := range names {
		cols, err := db.QueryContext(ctx, `SELECT name FROM pragma_index_info(`+q(n)+`)`)
		if err != nil {
			return nil, fmt.Errorf("reading index %s: %w", n, err)
		}
		u := UniqueIndex{Name: n}
		for cols.Next() {
			var c sql.NullString
			if err := cols.Scan(&c); err != nil {
				cols.Close()
				return nil, err
			}
			u.Columns = append(u.Columns, c.String)
		}
		cols.Close()
		out = append(out, u)
	}
	return out, nil
}
