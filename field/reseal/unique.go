package reseal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wardlab/ward/internal/sqltable"
)

// ErrUniquenessLost means a FromPlaintext job would encrypt a column that
// a unique index keeps unique, with no unique index over its blind index
// to take over: sealed values are random, so the database would compare
// nothing and accept a second account for one address (docs/ADOPTING.md,
// "Unique columns"). Run returns it, as a [*UniquenessError], before
// anything is written.
var ErrUniquenessLost = errors.New("reseal: the column's uniqueness would be lost")

// UniquenessError names the unique index that compares a column's
// plaintext and what would take over from it.
type UniquenessError struct {
	Table, Column string
	// Index is the unique index (or UNIQUE constraint) over the column.
	Index string
	// Columns are its columns; Want is the unique index that would keep
	// the same promise once values are sealed: the same columns with the
	// blind-index column (IndexColumn) for the column, empty without one.
	Columns, Want []string
}

func (e *UniquenessError) Error() string {
	if e.Want == nil {
		return fmt.Sprintf("%s.%s is kept unique by %s (%s), which compares nothing once its values are sealed, and the job has no blind-index column to take over: give it one (Job.Index, --index) with a unique index, or drop %s first if uniqueness does not matter",
			e.Table, e.Column, e.Index, strings.Join(e.Columns, ", "), e.Index)
	}
	return fmt.Sprintf("%s.%s is kept unique by %s (%s), which compares nothing once its values are sealed, and no unique index covers (%s) to take over: create it first, before a release that writes ciphertexts serves writes (CREATE UNIQUE INDEX … ON %s (%s))",
		e.Table, e.Column, e.Index, strings.Join(e.Columns, ", "), strings.Join(e.Want, ", "), e.Table, strings.Join(e.Want, ", "))
}

// Unwrap makes the error match [ErrUniquenessLost].
func (e *UniquenessError) Unwrap() error { return ErrUniquenessLost }

// CheckUnique returns a [*UniquenessError] if the job encrypts plaintext
// (FromPlaintext) in a column some unique index of the table covers,
// unless a unique index over the same columns with the blind-index column
// (IndexColumn) in the column's place exists; nil otherwise, and always
// for a job that re-seals ciphertexts (whose unique index, if any,
// already compared random values). Run calls it first; a dry run may call
// it to say so before the migration.
func (r *Job) CheckUnique(ctx context.Context) error {
	if !r.FromPlaintext {
		return nil
	}
	col := r.Column.Name()
	uniq, err := sqltable.UniqueIndexes(ctx, r.DB, r.Dialect.String(), r.Column.Table())
	if err != nil {
		return fmt.Errorf("reseal: %w", err)
	}
	for _, u := range uniq {
		if !slices.Contains(u.Columns, col) {
			continue
		}
		e := &UniquenessError{Table: r.Column.Table(), Column: col, Index: u.Name, Columns: u.Columns}
		if r.IndexColumn == "" {
			return e
		}
		for _, c := range u.Columns {
			if c == col {
				c = r.IndexColumn
			}
			e.Want = append(e.Want, c)
		}
		if !slices.ContainsFunc(uniq, func(v sqltable.UniqueIndex) bool { return sameSet(v.Columns, e.Want) }) {
			return e
		}
	}
	return nil
}

// sameSet reports whether a and b hold the same column names.
func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(c string) bool { return !slices.Contains(b, c) })
}
