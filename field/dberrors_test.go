package field

import (
	"errors"
	"fmt"
	"testing"
)

// sqlStateErr is a driver's error with a SQLSTATE, as pgx's PgError.
type sqlStateErr string

func (e sqlStateErr) Error() string    { return "SQLSTATE " + string(e) }
func (e sqlStateErr) SQLState() string { return string(e) }

// TestDatabaseErrors: what an application retries and what is a unique
// violation, by each engine's code, in an error chain too.
func TestDatabaseErrors(t *testing.T) {
	for _, err := range []error{sqlStateErr("40001"), sqlStateErr("40P01"), fmt.Errorf("tx: %w", errors.New("Error 1213 (40001): Deadlock found when trying to get lock"))} {
		if !Retryable(err) {
			t.Errorf("%v: not retryable", err)
		}
	}
	for _, err := range []error{sqlStateErr("23505"), errors.New("Error 1062 (23000): Duplicate entry 'a' for key 'u'"), errors.New("constraint failed: UNIQUE constraint failed: users.email (2067)")} {
		if !Duplicate(err) || Retryable(err) {
			t.Errorf("%v: duplicate %v, retryable %v", err, Duplicate(err), Retryable(err))
		}
	}
	if Retryable(nil) || Duplicate(nil) || Retryable(sqlStateErr("42P01")) {
		t.Error("nil or another error classified")
	}
}
