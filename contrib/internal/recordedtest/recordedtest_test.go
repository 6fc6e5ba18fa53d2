package recordedtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/contrib/internal/ormkit"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// sqlApp is the scenario's adapter written with database/sql alone: the
// shape every ORM adapter has (a sealed column bound to the row's ID, a
// v1 index as ormkit.Indexes computes it, then the recorded index through
// ormkit.Recorded in the write's transaction).
type sqlApp struct {
	db  *sql.DB
	col *field.Column
	src ledger.Column
	rec *ormkit.Recorded
}

// TestScenario runs the scenario against the database/sql adapter on
// SQLite: it holds for an adapter that computes its index values in the
// write's transaction.
func TestScenario(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	kr, err := keyring.Create(ctx, filepath.Join(dir, "kr.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db")+"?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE members (id TEXT PRIMARY KEY, email TEXT NOT NULL, email_index BLOB UNIQUE, email_index2 BLOB UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	s := &sqlApp{db: db}
	if s.col, err = field.NewColumn(kr, Table, Column, field.WithEncoding(field.Text)); err != nil {
		t.Fatal(err)
	}
	s.src = ledger.ColumnOf(s.col, "id")
	seeded := Seeded(20)
	v1, err := ormkit.NewIndexes(kr).Get(Table, Column)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range seeded {
		id := fmt.Sprintf("s%d", i)
		ct, err := s.col.SealString(field.RowString(id), e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO members (id, email, email_index) VALUES (?, ?, ?)`, id, ct, v1.Compute(e)); err != nil {
			t.Fatal(err)
		}
	}
	a := Join(t, db, field.SQLite, kr, Adapter{
		Record: func(ctx context.Context, lg *ledger.Ledger, o ledger.IndexerOptions) error {
			s.rec = ormkit.NewRecorded(kr, lg, o)
			_, err := s.rec.Get(ctx, s.src, "email_index", "email_index2")
			return err
		},
		Watch: func(ctx context.Context, every time.Duration) { s.rec.Watch(ctx, every, nil) },
	})
	a.Find, a.SignUp, a.Refresh = s.find, s.signUp, s.rec.Refresh
	t.Logf("%d sign-ups during the re-keys", a.Run(t, seeded))
}

func (s *sqlApp) find(email string) (string, error) {
	x, err := s.rec.Get(context.Background(), s.src, "email_index", "email_index2")
	if err != nil {
		return "", err
	}
	a, b := x.Lookup(email)
	var id string
	var ct field.Ciphertext
	err = s.db.QueryRow(`SELECT id, email FROM members WHERE email_index = ? OR email_index2 = ?`, a, b).Scan(&id, &ct)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	got, err := s.col.OpenString(field.RowString(id), ct)
	if err != nil {
		return "", err
	}
	if field.NormalizeFold(got) != field.NormalizeFold(email) {
		return "found " + got, nil
	}
	return id, nil
}

// write inserts (or, with update, moves) member id's address in a
// transaction of its own, its index computed in it.
func (s *sqlApp) write(ctx context.Context, id, email string, update bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	a, b, err := s.rec.Values(ormkit.WithTx(ctx, tx), s.src, "email_index", "email_index2", email)
	if err != nil {
		return err
	}
	ct, err := s.col.SealString(field.RowString(id), email)
	if err != nil {
		return err
	}
	q := `INSERT INTO members (email, email_index, email_index2, id) VALUES (?, ?, ?, ?)`
	if update {
		q = `UPDATE members SET email = ?, email_index = ?, email_index2 = ? WHERE id = ?`
	}
	if _, err := tx.ExecContext(ctx, q, ct, a, b, id); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlApp) signUp(ctx context.Context, c, i int) ([]string, error) {
	email, id := fmt.Sprintf("New%d@Example.com", i*2+c/2), fmt.Sprintf("c%d-%d", c, i)
	if err := s.write(ctx, id, email, false); err != nil || i%5 != 0 {
		return []string{email}, err
	}
	moved := fmt.Sprintf("Moved%d-%d@Example.com", c, i)
	if err := s.write(ctx, id, moved, true); err != nil {
		return []string{email}, nil
	}
	return []string{moved}, nil
}
