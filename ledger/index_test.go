package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// TestIndex: a blind index is recorded under the epoch current at its
// first use and computed under it after a rotation (its stored values
// keep matching), bound to the database; asking for it with another
// normaliser, size or index column is refused, while another name is
// another index with a key of its own.
func TestIndex(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		_, _, kr := fileKeyring(t)
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		c := IndexColumn{Table: "users", Column: "email", Index: "email_idx"}
		x, err := l.Index(ctx, kr, c, field.Fold)
		if err != nil {
			t.Fatal(err)
		}
		e1 := kr.Primary().ID
		stored := x.Compute("Alice@example.com")
		if _, err := keyring.NewManager(kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
			t.Fatal(err)
		}
		again, err := l.Index(ctx, kr, c, field.Fold)
		if err != nil || again.Epoch() != e1 || !bytes.Equal(again.Compute(" alice@EXAMPLE.com"), stored) {
			t.Fatalf("after a rotation: %v, epoch %v (recorded %v)", err, again.Epoch(), e1)
		}
		st, err := l.Verified(ctx, kr)
		if err != nil || len(st.Indexes) != 1 || st.Indexes[0].Normalizer != "fold" || st.Indexes[0].Size != field.DefaultIndexSize || len(st.IndexesAt(e1)) != 1 {
			t.Fatalf("recorded %+v, %v", st, err)
		}
		unbound, _ := field.NewIndex(kr, "users", "email", field.IndexOptions{Database: "db-other", Normalizer: field.Fold, Epoch: e1})
		if bytes.Equal(unbound.Compute("alice@example.com"), stored) {
			t.Fatal("the index is not bound to its database")
		}
		for name, changed := range map[string]IndexColumn{
			"size":         {Table: "users", Column: "email", Index: "email_idx", Size: 8},
			"index column": {Table: "users", Column: "email", Index: "email_idx2"},
		} {
			if _, err := l.Index(ctx, kr, changed, field.Fold); !errors.Is(err, ErrIndexChanged) {
				t.Errorf("another %s: %v", name, err)
			}
		}
		if _, err := l.Index(ctx, kr, c, field.NFC); !errors.Is(err, ErrIndexChanged) {
			t.Errorf("another normaliser: %v", err)
		}
		c.Name, c.Index = "email_prefix", "email_prefix_idx"
		prefix, err := l.Index(ctx, kr, c, field.Prefix(3, field.Fold))
		if err != nil || prefix.Epoch() != kr.Primary().ID {
			t.Fatalf("a second index of the column, after the rotation: %v", err)
		}
		if _, err := l.Index(ctx, kr, IndexColumn{Table: "users", Column: "email", Index: "x; DROP"}, field.Fold); err == nil {
			t.Fatal("an index column that is no identifier")
		}
	})
}

// TestIndexerWriteTxHoldsThePhase: a write's transaction reads the
// index's phase with a shared lock, so a re-key cannot move on while a
// write that computed its values in the phase before is uncommitted (it
// would land in columns the next phase no longer keeps unique); after the
// commit it moves on, and the next write follows it. The same through
// WriteIn, the transaction reached through an ORM's query handle.
func TestIndexerWriteTxHoldsThePhase(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		for _, via := range []string{"WriteTx", "WriteIn"} {
			t.Run(via, func(t *testing.T) { writeHoldsThePhase(t, d, via) })
		}
	})
}

// queryOnly is a transaction seen only through QueryContext, as an ORM's
// handle on it shows it.
type queryOnly struct{ tx *sql.Tx }

func (q queryOnly) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return q.tx.QueryContext(ctx, query, args...)
}

func writeHoldsThePhase(t *testing.T, d testDB, via string) {
	write := func(x *Indexer, tx *sql.Tx, value string) ([]byte, []byte, error) {
		if via == "WriteIn" {
			return x.WriteIn(context.Background(), queryOnly{tx}, value)
		}
		return x.WriteTx(context.Background(), tx, value)
	}
	ctx := context.Background()
	_, _, kr := fileKeyring(t)
	l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
	x, err := l.Indexer(ctx, kr, IndexColumn{Table: "users", Column: "email", Index: "email_idx", Spare: "email_idx2"}, field.Fold, IndexerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := kr.Primary().ID
	rec, err := l.ChangeIndex(ctx, kr, x.Record(), func(c *IndexColumn) error {
		c.Rekey = &IndexRekey{Epoch: e, Phase: RekeyBoth}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, b, err := write(x, tx, "a@x"); err != nil || a == nil || b == nil {
		t.Fatalf("a write in the first phase: %x %x %v", a, b, err)
	}
	moved := make(chan error, 1)
	go func() {
		_, err := l.ChangeIndex(ctx, kr, rec, func(c *IndexColumn) error { c.Rekey.Phase = RekeyFilled; return nil })
		moved <- err
	}()
	select {
	case err := <-moved:
		t.Fatalf("the phase moved while a write of the phase before was open: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	tx, err = d.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if a, b, err := write(x, tx, "a@x"); err != nil || a != nil || b == nil {
		t.Fatalf("a write after the phase moved on: %x %x %v", a, b, err)
	}
}

// TestIndexerCurrent: Current gives a job the index of the column that
// holds the values (the same values Lookup gives for it) and refuses while
// a re-key is under way.
func TestIndexerCurrent(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		_, _, kr := fileKeyring(t)
		l := &Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
		x, err := l.Indexer(ctx, kr, IndexColumn{Table: "users", Column: "email", Index: "email_idx", Spare: "email_idx2"}, field.Fold, IndexerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		idx, col, err := x.Current()
		if want, _ := x.Lookup("A@x"); err != nil || col != "email_idx" || !bytes.Equal(idx.Compute("a@X"), want) {
			t.Fatalf("Current: %v %q %v", idx, col, err)
		}
		if _, err := l.ChangeIndex(ctx, kr, x.Record(), func(c *IndexColumn) error {
			c.Rekey = &IndexRekey{Epoch: kr.Primary().ID, Phase: RekeyBoth}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := x.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := x.Current(); !errors.Is(err, ErrRekeying) {
			t.Fatalf("Current during a re-key: %v", err)
		}
	})
}
