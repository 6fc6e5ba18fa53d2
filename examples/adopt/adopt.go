// Package adopt is the adoption guide (docs/ADOPTING.md) as a program: an
// application with a plaintext users table — a database-assigned key
// (bigserial, AUTOINCREMENT) and a UNIQUE e-mail column — adopts ward
// step by step while it keeps serving: two blind-index columns with their
// UNIQUE indexes (before any release writes them), mixed mode, the online
// migration with the index backfilled in the same UPDATE, the census, the
// plaintext's UNIQUE dropped, the end of mixed mode, a rotation and the
// index's re-key to the new key. Each step is a function an application
// would run; Run runs them in order and says what each did. The tests run it on SQLite,
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
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"
)

// App is the application's data layer, before and after adoption.
type App struct {
	DB      *sql.DB
	Dialect field.Dialect
	// Email is the encrypted column and Emails its blind index, in the
	// columns EmailIndex names (ledger.Indexer: recorded in the ledger,
	// keyed per index and integrity epoch, re-keyed after a rotation);
	// nil before adoption (plaintext).
	Email  *field.Column
	Emails *ledger.Indexer
	// Mixed is true while old rows may still hold plaintext.
	Mixed bool
}

// EmailIndex is the blind index of the e-mail addresses (case folded):
// email_index holds it, and email_index2 is the spare column a re-key
// (lifecycle.Reindex, ward keyring reindex) moves it into and back.
var EmailIndex = ledger.IndexColumn{Table: "users", Column: "email", Index: "email_index", Spare: "email_index2"}

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

// AddIndexColumn is step 1: the two columns of the blind index of the
// e-mail (EmailIndex), each with its UNIQUE index, in place before any
// release writes the index (docs/ADOPTING.md, "Unique columns"): from the
// first sealed address on, the database compares indexes, so two
// concurrent sign-ups of one address cannot both commit (NULL, the index
// of a row no release has written yet, collides with nothing). The second
// column is what lets a rotation re-key the index with the application
// serving.
func AddIndexColumn(ctx context.Context, db *sql.DB, d field.Dialect) error {
	typ := map[field.Dialect]string{field.Postgres: "BYTEA", field.MySQL: "VARBINARY(40)"}[d] // MySQL indexes no BLOB
	if typ == "" {
		typ = "BLOB"
	}
	for _, c := range []string{EmailIndex.Index, EmailIndex.Spare} {
		if _, err := db.ExecContext(ctx, `ALTER TABLE users ADD COLUMN `+c+` `+typ); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, `CREATE UNIQUE INDEX users_`+c+` ON users (`+c+`)`); err != nil {
			return err
		}
	}
	return nil
}

// Adopt is step 2: the application in mixed mode — it writes every new
// address sealed (bound to its row's key) with its index, and reads old
// rows' plaintext as plaintext. The index is recorded in lg, the
// database's ledger; gate is the process's fleet gate, on which it says
// which phase of a re-key it follows (nil: a process that is not
// registered, which must not serve while an index is re-keyed).
func (a *App) Adopt(ctx context.Context, kr *keyring.Keyring, lg *ledger.Ledger, gate *fleetgate.Gate) error {
	var err error
	if a.Email, err = field.NewColumn(kr, "users", "email", field.WithEncoding(field.Text), field.AcceptPlaintext()); err != nil {
		return err
	}
	a.Emails, err = lg.Indexer(ctx, kr, EmailIndex, field.Fold, ledger.IndexerOptions{Gate: gate})
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
	// The index's values for this write, read in its transaction, so that
	// a re-key moves on only once it commits (ledger.Indexer.WriteTx).
	x, y, err := a.Emails.WriteTx(ctx, tx, email)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, a.Dialect.Rebind(`UPDATE users SET email = ?, email_index = ?, email_index2 = ? WHERE id = ?`), ct.AsText(), x, y, id); err != nil {
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
		x, y := a.Emails.Lookup(email)
		err = tx.QueryRowContext(ctx, a.Dialect.Rebind(`SELECT id FROM users WHERE email_index = ? OR email_index2 = ? OR (email_index IS NULL AND email_index2 IS NULL AND lower(email) = lower(?))`),
			x, y, email).Scan(&id)
	default: // either column: during a re-key a row may be in either
		x, y := a.Emails.Lookup(email)
		err = tx.QueryRowContext(ctx, a.Dialect.Rebind(`SELECT id FROM users WHERE email_index = ? OR email_index2 = ?`), x, y).Scan(&id)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// Job is the migration of steps 3 to 5 (what `ward encrypt-column --table
// users --column email --text --index email_index` runs, computing the
// index as the ledger records it): it encrypts each plaintext address for
// its row and writes its index in the same compare-and-swap UPDATE, and
// fills in the index of addresses the application already sealed. It is
// refused while the index is re-keyed (ledger.ErrRekeying).
func (a *App) Job() (*reseal.Job, error) {
	idx, col, err := a.Emails.Current()
	if err != nil {
		return nil, err
	}
	return &reseal.Job{DB: a.DB, Dialect: a.Dialect, Column: a.Email, Key: "id", FromPlaintext: true,
		Index: idx, IndexColumn: col, BatchSize: 100}, nil
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
	lg := &ledger.Ledger{DB: db, Dialect: d}
	step := func(n int, what string) { fmt.Fprintf(out, "step %d: %s\n", n, what) }
	if _, err := app.AddUser(ctx, "before@example.com", "signed up before ward"); err != nil {
		return err
	}
	step(1, "ALTER TABLE users ADD COLUMN email_index, email_index2; CREATE UNIQUE INDEX on each")
	if err := AddIndexColumn(ctx, db, d); err != nil {
		return err
	}
	step(2, "deploy mixed mode: new addresses sealed and indexed, old plaintext still read")
	if err := app.Adopt(ctx, kr, lg, nil); err != nil {
		return err
	}
	if _, err := app.AddUser(ctx, "during@example.com", "signed up in mixed mode"); err != nil {
		return err
	}
	if _, err := app.AddUser(ctx, "USER3@example.com", "a duplicate of a plaintext row"); !errors.Is(err, ErrTaken) {
		return fmt.Errorf("a duplicate of an unmigrated address was accepted: %v", err)
	}
	if err := app.migrate(ctx, step); err != nil {
		return err
	}
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
	return app.rotate(ctx, kr, lg, step)
}

// migrate is steps 3 to 5: the census, the migration and its check.
func (a *App) migrate(ctx context.Context, step func(int, string)) error {
	job, err := a.Job()
	if err != nil {
		return err
	}
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
	return nil
}

// rotate is steps 8 to 10: a rotation, the index's re-key to the new key
// and the old key's retirement.
func (a *App) rotate(ctx context.Context, kr *keyring.Keyring, lg *ledger.Ledger, step func(int, string)) error {
	// The column is recorded in the database's ledger, so that a rotation
	// across the fleet re-encrypts it.
	if err := lg.RecordColumns(ctx, kr, ledger.ColumnOf(a.Email, "id")); err != nil {
		return err
	}
	dbs := []lifecycle.Database{{Name: "app", DB: a.DB, Dialect: a.Dialect, Ledger: lg}}
	r, err := lifecycle.Rotate(ctx, kr, dbs, lifecycle.RotateOptions{Wait: time.Minute})
	if err != nil {
		return err
	}
	if _, _, err := a.FindByEmail(ctx, "user9@example.com"); err != nil {
		return err
	}
	step(8, fmt.Sprintf("rotate across the fleet (lifecycle.Rotate, as ward keyring rotate --db): %d resealed under %v", r.Columns[0].Stats.Resealed, kr.Primary().ID))
	// The index is still under the old key's epoch: move it, with the
	// fleet serving, so that a copy of the keyring file from before tests
	// no guess against it and the old key can go.
	ix, err := lifecycle.Reindex(ctx, kr, dbs[0], EmailIndex.Table, EmailIndex.Column, "", lifecycle.ReindexOptions{Wait: time.Minute})
	if err != nil {
		return err
	}
	if err := a.Emails.Refresh(ctx); err != nil {
		return err
	}
	if _, _, err := a.FindByEmail(ctx, "user9@example.com"); err != nil {
		return err
	}
	cur, _ := ix.Index.Columns()
	step(9, fmt.Sprintf("re-key the blind index (lifecycle.Reindex, as ward keyring reindex --db): %d rows indexed under %v in %s, %d old values cleared", ix.Fill.Indexed, ix.To, cur, ix.Cleared))
	// Nothing references the old key any more: retire it, so that a
	// backup's values under it no longer open with this keyring.
	if _, err := lifecycle.Retire(ctx, kr, dbs, r.Old); err != nil {
		return err
	}
	step(10, fmt.Sprintf("retire the old key (lifecycle.Retire, as ward keyring retire): %v removed from the keyring", r.Old))
	return nil
}
