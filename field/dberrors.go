package field

import "github.com/wardlab/ward/internal/sqltable"

// Retryable reports whether err is a transaction the database rolled back
// for a concurrent one, which the caller should run again from its start:
// MySQL's and MariaDB's error 1213 (a deadlock, or on a Galera cluster a
// transaction that lost certification to one on another node),
// PostgreSQL's 40001 (a serialization failure) and 40P01 (a deadlock).
// ward's own compare-and-swap writes retry these themselves; an
// application that runs ward's writes in its own transaction
// (subject.Store.ForgetIn) retries the transaction when this is true.
func Retryable(err error) bool { return sqltable.Conflict(err) }

// Duplicate reports whether err is a unique violation: PostgreSQL's
// 23505, SQLite's UNIQUE or PRIMARY KEY constraint, MySQL's and MariaDB's
// 1062. It reads the drivers' errors by their SQLSTATE or text, so it needs
// none of them imported.
func Duplicate(err error) bool { return sqltable.Duplicate(err) }
