package lifecycle

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/internal/printable"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// A sweep looks for values under a keyring key in every column of a
// database that can hold one, not only in the columns its ledger records:
// a service that seals into a table no ward job ever touched has recorded
// nothing, and retiring the key would leave those values unreadable for
// good. It reads the first 16 bytes (characters) of each non-NULL value,
// enough for a ciphertext's header in either form (keycore.RemnantOf), so
// it needs bounded memory whatever the values' size, writes nothing, and
// can be run again from the start after an interruption.

// sweepPrefix is how much of each value a sweep reads.
const sweepPrefix = 16

// minCiphertext is the shortest ward ciphertext (v1 and v2 under
// AES-GCM, an empty plaintext: 10 + 12 + 16 bytes): a column declared
// narrower holds none.
const minCiphertext = 38

// sweptColumn is one column a sweep reads.
type sweptColumn struct {
	Schema, Table, Column string // Schema is PostgreSQL's, else ""
}

// name is the column's table-qualified name, schema-qualified on
// PostgreSQL, escaped for a terminal where the database made it strange.
func (c sweptColumn) name() string {
	s := c.Table + "." + c.Column
	if c.Schema != "" {
		s = c.Schema + "." + s
	}
	return printable.String(s)
}

// quote quotes an identifier for d, whatever it holds: the catalog's names
// are not ward's to choose.
func quote(d field.Dialect, name string) string {
	q := `"`
	if d == field.MySQL {
		q = "`"
	}
	return q + strings.ReplaceAll(name, q, q+q) + q
}

// Swept is what a sweep found in one column a ledger does not record.
type Swept struct {
	// Name is the column as schema.table.column (PostgreSQL) or
	// table.column, escaped where it holds unprintable characters.
	Name   string
	Values int // values under the key
}

// Sweep counts, in every column of d that can hold a ward ciphertext
// (text and binary columns of the tables on the connection's search path
// or in its current database, SQLite's every column; ward's subject-key
// table excepted, which [References] counts as keys, and the tables
// d.Unswept names) and that the ledger
// state st does not record, the values sealed under keyring key id, in
// either form. Columns declared narrower than the shortest ciphertext are
// skipped. A value of another keyring matches only if its random 32-bit
// key ID equals id.
func Sweep(ctx context.Context, d Database, st *ledger.State, id keyring.KeyID) ([]Swept, error) {
	cols, err := sweepColumns(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("listing the columns that can hold ciphertexts: %w", err)
	}
	var out []Swept
	for _, c := range cols {
		if recorded(st, c) {
			continue
		}
		n, err := sweepCount(ctx, d, c, id)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, Swept{Name: c.name(), Values: n})
		}
	}
	return out, nil
}

// recorded reports whether the ledger records c (its census counts it).
func recorded(st *ledger.State, c sweptColumn) bool {
	if st == nil {
		return false
	}
	return slices.ContainsFunc(st.Columns, func(r ledger.Column) bool {
		return strings.EqualFold(r.Column, c.Column) && (strings.EqualFold(r.Table, c.Table) || strings.EqualFold(r.Table, c.Schema+"."+c.Table))
	})
}

// sweepColumns lists the columns a sweep reads.
func sweepColumns(ctx context.Context, d Database) ([]sweptColumn, error) {
	var q string
	switch d.Dialect {
	case field.Postgres:
		q = `SELECT c.table_schema, c.table_name, c.column_name FROM information_schema.columns c
			JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
			WHERE t.table_type = 'BASE TABLE' AND c.table_schema = ANY (current_schemas(false))
			AND c.data_type IN ('text', 'character varying', 'character', 'bytea')
			AND (c.character_maximum_length IS NULL OR c.character_maximum_length >= ` + fmt.Sprint(minCiphertext) + `)
			ORDER BY 1, 2, 3`
	case field.MySQL:
		q = `SELECT '', c.TABLE_NAME, c.COLUMN_NAME FROM information_schema.COLUMNS c
			JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME
			WHERE t.TABLE_TYPE = 'BASE TABLE' AND c.TABLE_SCHEMA = DATABASE()
			AND c.DATA_TYPE IN ('char', 'varchar', 'tinytext', 'text', 'mediumtext', 'longtext', 'binary', 'varbinary', 'tinyblob', 'blob', 'mediumblob', 'longblob')
			AND COALESCE(LEAST(c.CHARACTER_MAXIMUM_LENGTH, c.CHARACTER_OCTET_LENGTH), ` + fmt.Sprint(minCiphertext) + `) >= ` + fmt.Sprint(minCiphertext) + `
			ORDER BY 2, 3`
	case field.SQLite:
		// Any column of any table can hold any value.
		q = `SELECT '', m.name, p.name FROM sqlite_schema m, pragma_table_info(m.name) p
			WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY 2, 3`
	default:
		return nil, fmt.Errorf("a sweep needs a field.Dialect")
	}
	rows, err := d.DB.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sweptColumn
	for rows.Next() {
		var c sweptColumn
		if err := rows.Scan(&c.Schema, &c.Table, &c.Column); err != nil {
			return nil, err
		}
		if strings.EqualFold(c.Table, subject.DefaultKeysTable) || slices.ContainsFunc(d.Unswept, func(u string) bool { return strings.EqualFold(u, c.Table) }) {
			continue
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// sweepCount counts the values of c whose header names keyring key id. A
// table dropped meanwhile counts nothing.
func sweepCount(ctx context.Context, d Database, c sweptColumn, id keyring.KeyID) (int, error) {
	t, col := quote(d.Dialect, c.Table), quote(d.Dialect, c.Column)
	if c.Schema != "" {
		t = quote(d.Dialect, c.Schema) + "." + t
	}
	rows, err := d.DB.QueryContext(ctx, fmt.Sprintf(`SELECT SUBSTR(%s, 1, %d) FROM %s WHERE %s IS NOT NULL`, col, sweepPrefix, t, col))
	if sqltable.Missing(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweeping %s: %w", c.name(), err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var head sql.RawBytes
		if err := rows.Scan(&head); err != nil {
			return 0, fmt.Errorf("sweeping %s: %w", c.name(), err)
		}
		if r, ok := keycore.RemnantOf(head); ok && !r.Subject && r.KeyID == keycore.KeyID(id) {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sweeping %s: %w", c.name(), err)
	}
	return n, nil
}
