// Package adopt is the adoption guide (docs/ADOPTING.md) as a program: an
// application with a plaintext users table — a database-assigned key
// (bigserial, AUTOINCREMENT) and a UNIQUE e-mail column — adopts ward
// step by step while it keeps serving: a blind-index column with its
// UNIQUE index (before any release writes it), mixed mode, the online
// migration with the index backfilled in the same UPDATE, the census, the
// plaintext's UNIQUE dropped, the end of mixed mode, and a rotation. Each step is a function an application would run; Run runs
// them in order and says what each did. The tests run it on SQLite,
// PostgreSQL and MariaDB; `go run ./examples/adopt/cmd/adopt` runs it on a temporary
// SQLite file.
package adopt

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// App is the application's data layer, before and after adoption.
type App struct {
	DB      *sql.DB
	Dialect field.Dialect
	// Email is the encrypted column and EmailIndex its blind index; nil
	// before adoption (plaintext).
	Email      *field.Column
	EmailIndex *field.BlindIndex
	// Mixed is true while old rows may still hold plaintext.
	Mixed bool
}

// ErrTaken means the address already has an account.
var ErrTaken = errors.New("adopt: the address is taken")

// Seed creates the plaintext schema the application started with and n
// users.
func Seed(ctx context.Context, db *sql.DB, d field.Dialect, n int) error {
	id, email := "INTEGER PRIMARY KEY AUTOINCREMENT", "TEXT"
	switch d {
	case field.Postgres:
		id = "BIGSERIAL PRIMARY KEY"
	case field.MySQL:
		id, email = "BIGINT AUTO_INCREMENT PRIMARY KEY", "VARCHAR(512)" // MySQL indexes no TEXT; room for the sealed form
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE users (id `+id+`, email `+email+` UNIQUE, name TEXT NOT NULL)`); err != nil {
		return err
	}
	for i := range n {
		if _, err := db.ExecContext(ctx, d.Rebind(`INSERT INTO users (email, name) VALUES (?, ?)`), fmt.Sprintf("User%d@Example.com", i), fmt.Sprint("user ", i)); err != nil {
			return err
		}
	}
	return nil
}

// AddIndexColumn is step 1: a column for the blind index of the e-mail
// and its UNIQUE index, in place before any release writes the index
// (docs/ADOPTING.md, "Unique columns"): from the first sealed address on,
// the database compares indexes, so two concurrent sign-ups of one
// address cannot both commit (NULL, the index of a row no release has
// written yet, collides with nothing).
func AddIndexColumn(ctx context.Context, db *sql.DB, d field.Dialect) error {
	typ := map[field.Dialect]string{field.Postgres: "BYTEA", field.MySQL: "VARBINARY(32)"}[d] // MySQL indexes no BLOB
	if typ == "" {
		typ = "BLOB"
	}
	if _, err := db.ExecContext(ctx, `ALTER TABLE users ADD COLUMN email_index `+typ); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `CREATE UNIQUE INDEX users_email_index ON users (email_index)`)
	return err
}

// Adopt is step 2: the application in mixed mode — it writes every new
// address sealed (bound to its row's key) with its index, and reads old
// rows' plaintext as plaintext.
func (a *App) Adopt(kr *keyring.Keyring) error {
	var err error
	if a.Email, err = field.NewColumn(kr, "users", "email", field.WithEncoding(field.Text), field.AcceptPlaintext()); err != nil {
		return err
	}
	a.EmailIndex, err = field.NewBlindIndex(kr, "users", "email", field.WithNormalizer(field.NormalizeFold))
	a.Mixed = true
	return err
}

// EndMixedMode is step 6: every row is encrypted and indexed; plaintext
// is refused from now on.
func (a *App) EndMixedMode(kr *keyring.Keyring) error {
	var err error
	a.Email, err = field.NewColumn(kr, "users", "email", field.WithEncoding(field.Text))
	a.Mixed = false
	return err
}

// AddUser signs a user up. The key is assigned by the database, so the
// row is inserted first and its address sealed for the key it got, in the
// same transaction: no other transaction ever sees the row without its
// sealed address.
func (a *App) AddUser(ctx context.Context, email, name string) (int64, error) {
	tx, err := a.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if a.Email == nil { // before adoption
		id, err := insertReturning(ctx, tx, a.Dialect, `INSERT INTO users (email, name) VALUES (?, ?)`, email, name)
		if err != nil {
			return 0, taken(err)
		}
		return id, tx.Commit()
	}
	// The transaction writes first, so that SQLite never has to upgrade a
	// read lock held by several processes. The UNIQUE index on
	// email_index refuses a duplicate of any indexed row, committed or
	// concurrent; in mixed mode the rows written before ward, which have
	// no index until the migration reaches them, are looked up by their
	// plaintext in the same transaction. That is race-free: such rows are
	// never new, and a row the migration indexes meanwhile is found by
	// one lookup or the other.
	id, err := insertReturning(ctx, tx, a.Dialect, `INSERT INTO users (name) VALUES (?)`, name)
	if err != nil {
		return 0, err
	}
	if a.Mixed {
		if _, ok, err := a.find(ctx, tx, email); err != nil {
			return 0, err
		} else if ok {
			return 0, ErrTaken
		}
	}
	ct, err := a.Email.SealString(field.RowInt(id), email)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, a.Dialect.Rebind(`UPDATE users SET email = ?, email_index = ? WHERE id = ?`), ct.AsText(), a.EmailIndex.Compute(email), id); err != nil {
		return 0, taken(err)
	}
	return id, tx.Commit()
}

func insertReturning(ctx context.Context, tx *sql.Tx, d field.Dialect, q string, args ...any) (int64, error) {
	var id int64
	if d == field.Postgres {
		err := tx.QueryRowContext(ctx, d.Rebind(q+` RETURNING id`), args...).Scan(&id)
		return id, err
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func taken(err error) error {
	if field.Duplicate(err) || err != nil && strings.Contains(strings.ToLower(err.Error()), "unique") {
		return fmt.Errorf("%w (%v)", ErrTaken, err)
	}
	return err
}

// FindByEmail returns the user with this address (any case) and their
// stored address, opened.
func (a *App) FindByEmail(ctx context.Context, email string) (int64, string, error) {
	tx, err := a.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, "", err
	}
	defer tx.Rollback()
	id, ok, err := a.find(ctx, tx, email)
	if err != nil || !ok {
		return 0, "", err
	}
	if a.Email == nil {
		var plain string
		err := tx.QueryRowContext(ctx, a.Dialect.Rebind(`SELECT email FROM users WHERE id = ?`), id).Scan(&plain)
		return id, plain, err
	}
	var ct field.Ciphertext
	if err := tx.QueryRowContext(ctx, a.Dialect.Rebind(`SELECT email FROM users WHERE id = ?`), id).Scan(&ct); err != nil {
		return 0, "", err
	}
	stored, err := a.Email.OpenString(field.RowInt(id), ct)
	return id, stored, err
}

// EmailOf returns the stored address of user id, opened (before adoption,
// whatever the column holds).
func (a *App) EmailOf(ctx context.Context, id int64) (string, error) {
	q := a.Dialect.Rebind(`SELECT email FROM users WHERE id = ?`)
	if a.Email == nil {
		var plain string
		err := a.DB.QueryRowContext(ctx, q, id).Scan(&plain)
		return plain, err
	}
	var ct field.Ciphertext
	if err := a.DB.QueryRowContext(ctx, q, id).Scan(&ct); err != nil {
		return "", err
	}
	return a.Email.OpenString(field.RowInt(id), ct)
}

func (a *App) find(ctx context.Context, tx *sql.Tx, email string) (int64, bool, error) {
	var id int64
	var err error
	switch {
	case a.Email == nil:
		err = tx.QueryRowContext(ctx, a.Dialect.Rebind(`SELECT id FROM users WHERE lower(email) = lower(?)`), email).Scan(&id)
	case a.Mixed: // rows not yet migrated have no index but plaintext
		err = tx.QueryRowContext(ctx, a.Dialect.Rebind(`SELECT id FROM users WHERE email_index = ? OR (email_index IS NULL AND lower(email) = lower(?))`),
			a.EmailIndex.Compute(email), email).Scan(&id)
	default:
		err = tx.QueryRowContext(ctx, a.Dialect.Rebind(`SELECT id FROM users WHERE email_index = ?`), a.EmailIndex.Compute(email)).Scan(&id)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// Job is the migration of steps 3 to 5 (what `ward encrypt-column --table
// users --column email --text --index email_index` runs): it encrypts
// each plaintext address for its row and writes its index in the same
// compare-and-swap UPDATE, and fills in the index of addresses the
// application already sealed.
func (a *App) Job() *reseal.Job {
	return &reseal.Job{DB: a.DB, Dialect: a.Dialect, Column: a.Email, Key: "id", FromPlaintext: true,
		Index: a.EmailIndex, IndexColumn: "email_index", BatchSize: 100}
}

// DropPlaintextUnique is step 6: the UNIQUE constraint on the e-mail
// column, meaningless over ciphertexts now that every row has its index,
// is dropped on PostgreSQL and MySQL (SQLite cannot drop an inline
// constraint, and random ciphertexts never collide).
func DropPlaintextUnique(ctx context.Context, db *sql.DB, d field.Dialect) error {
	switch d {
	case field.Postgres:
		_, err := db.ExecContext(ctx, `ALTER TABLE users DROP CONSTRAINT users_email_key`)
		return err
	case field.MySQL:
		_, err := db.ExecContext(ctx, `ALTER TABLE users DROP INDEX email`)
		return err
	}
	return nil
}

// Run adopts ward on the seeded database db, step by step, with the
// application serving between the steps, and writes what each step did.
func Run(ctx context.Context, db *sql.DB, d field.Dialect, kr *keyring.Keyring, out io.Writer) error {
	app := &App{DB: db, Dialect: d}
	step := func(n int, what string) { fmt.Fprintf(out, "step %d: %s\n", n, what) }
	if _, err := app.AddUser(ctx, "before@example.com", "signed up before ward"); err != nil {
		return err
	}
	step(1, "ALTER TABLE users ADD COLUMN email_index; CREATE UNIQUE INDEX users_email_index ON users (email_index)")
	if err := AddIndexColumn(ctx, db, d); err != nil {
		return err
	}
	step(2, "deploy mixed mode: new addresses sealed and indexed, old plaintext still read")
	if err := app.Adopt(kr); err != nil {
		return err
	}
	if _, err := app.AddUser(ctx, "during@example.com", "signed up in mixed mode"); err != nil {
		return err
	}
	if _, err := app.AddUser(ctx, "USER3@example.com", "a duplicate of a plaintext row"); !errors.Is(err, ErrTaken) {
		return fmt.Errorf("a duplicate of an unmigrated address was accepted: %v", err)
	}
	job := app.Job()
	c, err := job.Count(ctx)
	if err != nil {
		return err
	}
	step(3, fmt.Sprintf("census (ward encrypt-column --dry-run): %d rows, %d plaintext, %d sealed without an index", c.Rows, c.Plaintext, c.IndexMissing))
	st, err := job.Run(ctx)
	if err != nil {
		return err
	}
	step(4, fmt.Sprintf("migrate (ward encrypt-column --index email_index): %d encrypted, %d only indexed, %d conflicts", st.Plaintext, st.Indexed, st.Conflicts))
	if c, err = job.Count(ctx); err != nil || !c.Done() {
		return fmt.Errorf("census after the migration is not done: %+v %v", c, err)
	}
	step(5, "verify (ward encrypt-column --check): done")
	if err := DropPlaintextUnique(ctx, db, d); err != nil {
		return err
	}
	if err := app.EndMixedMode(kr); err != nil {
		return err
	}
	step(6, "UNIQUE on the ciphertexts dropped; mixed mode off: plaintext refused from now on")
	for _, e := range []string{"user7@EXAMPLE.com", "Before@Example.com", "during@example.com"} {
		if _, stored, err := app.FindByEmail(ctx, e); err != nil || !strings.EqualFold(stored, e) {
			return fmt.Errorf("search for %s: %q %v", e, stored, err)
		}
	}
	if _, err := app.AddUser(ctx, "User7@example.com", "a duplicate"); !errors.Is(err, ErrTaken) {
		return fmt.Errorf("a duplicate address was accepted: %v", err)
	}
	if _, err := db.ExecContext(ctx, d.Rebind(`UPDATE users SET email_index = (SELECT email_index FROM users WHERE id = 1) WHERE id = 2`)); err == nil {
		return errors.New("the UNIQUE index on email_index did not refuse a duplicate")
	}
	step(7, "search and uniqueness through the index: found each address in any case, refused duplicates")
	// The column is recorded in the database's ledger, so that a rotation
	// across the fleet re-encrypts it.
	lg := &ledger.Ledger{DB: db, Dialect: d}
	if err := lg.RecordColumns(ctx, kr, ledger.ColumnOf(app.Email, "id")); err != nil {
		return err
	}
	dbs := []lifecycle.Database{{Name: "app", DB: db, Dialect: d, Ledger: lg}}
	r, err := lifecycle.Rotate(ctx, kr, dbs, lifecycle.RotateOptions{Wait: time.Minute})
	if err != nil {
		return err
	}
	if _, _, err := app.FindByEmail(ctx, "user9@example.com"); err != nil {
		return err
	}
	step(8, fmt.Sprintf("rotate across the fleet (lifecycle.Rotate, as ward keyring rotate --db): %d re-encrypted under %v", r.Columns[0].Stats.Reencrypted, kr.Primary().ID))
	// Nothing references the old key any more: retire it, so that a
	// backup's values under it no longer open with this keyring.
	if _, err := lifecycle.Retire(ctx, kr, dbs, r.Old); err != nil {
		return err
	}
	step(9, fmt.Sprintf("retire the old key (lifecycle.Retire, as ward keyring retire): %v removed from the keyring", r.Old))
	return nil
}
