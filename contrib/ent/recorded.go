package wardent

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"entgo.io/ent"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/wardlab/ward/contrib/internal/ormkit"
	"github.com/wardlab/ward/ledger"
)

// Recorded blind indexes. A field with a SpareColumn beside its
// IndexColumn (two Optional Bytes fields, each Unique) has a recorded
// index (ledger.Indexer): v2, keyed by an integrity epoch, bound to the
// database, recorded in its ledger and re-keyed by `ward keyring reindex`
// while the application serves:
//
//	{Type: "Member", Table: "members", Column: "email", IndexColumn: "email_index", SpareColumn: "email_index2"}
//
//	err := codec.Record(ctx, &ledger.Ledger{DB: sqlDB, Dialect: field.Postgres}, ledger.IndexerOptions{Gate: gate})
//	go codec.Watch(ctx, 5*time.Second, logError)
//	tx, err := client.Tx(ctx)
//	m, err := tx.Member.Create().SetID(id).SetEmail(email).Save(ctx)
//	err = tx.Commit()
//	m, err := client.Member.Query().Where(codec.Eq("Member", "email", email)).Only(ctx)
//
// A write computes its index values in its own transaction, reading the
// ledger's record of the index under a shared lock, so that a re-key's
// next phase waits for it. The hook reaches the transaction through the
// mutation's client, which runs raw queries only when the code is
// generated with the sql/execquery feature (ent generate --feature
// sql/execquery, over ent's own SQL driver or a wrapper that passes
// QueryContext on, as dialect.Debug does); a write outside a transaction
// (client.Tx) is refused ([ErrNoTx]). On SQLite, begin transactions IMMEDIATE
// (_txlock=immediate), so that writers queue for the write lock. Between
// re-keys one column holds the values and the other is NULL; during one,
// writes fill both and then the new one, and Eq looks in both. A field
// with an IndexColumn and no SpareColumn has a v1 index (keyed by the
// keyring's root: a copy of the keyring file from before any rotation
// computes it, and it is never re-keyed); adding the spare field and
// recording with IndexerOptions.FromV1 records it as v1, and a re-key
// moves it to v2. An upsert (OnConflict) writes the index columns its
// insert sets only: do not upsert an entity with a recorded index.

// ErrNoTx means a write of a field with a recorded blind index ran
// outside a transaction: nothing was written.
var ErrNoTx = ormkit.ErrNoTx

// Record records in lg (the ledger of the Codec's database) the blind
// indexes of the fields that have a SpareColumn, with o (o.Gate: the
// fleet gate the process acknowledges re-key phases on; o.FromV1: record
// a new index as the v1 index its rows hold). Call it once, at start,
// before the client writes.
func (c *Codec) Record(ctx context.Context, lg *ledger.Ledger, o ledger.IndexerOptions) error {
	c.rec = ormkit.NewRecorded(c.kr, lg, o)
	for _, bs := range c.fields {
		for _, b := range bs {
			if b.SpareColumn == "" {
				continue
			}
			if _, err := c.rec.Get(ctx, b.src, b.IndexColumn, b.SpareColumn); err != nil {
				return fmt.Errorf("wardent: recording the blind index of %s.%s: %w", b.Type, b.Column, err)
			}
		}
	}
	return nil
}

// Refresh re-reads the ledger's record of every recorded index, so that
// look-ups (Eq) follow a re-key; Watch calls it periodically.
func (c *Codec) Refresh(ctx context.Context) error {
	if c.rec == nil {
		return nil
	}
	return c.rec.Refresh(ctx)
}

// Watch calls Refresh every interval until ctx ends, reporting failures
// to onError (which may be nil). Every process whose index may be
// re-keyed runs it (with the fleet gate given to Record), so that the
// re-key's phases reach its look-ups.
func (c *Codec) Watch(ctx context.Context, every time.Duration, onError func(error)) {
	if c.rec != nil {
		c.rec.Watch(ctx, every, onError)
	}
}

// recorded returns the Indexer of b's recorded index.
func (c *Codec) recorded(ctx context.Context, b *bound) (*ledger.Indexer, error) {
	if c.rec == nil {
		return nil, fmt.Errorf("wardent: %s.%s has a recorded blind index: call Codec.Record", b.Type, b.Column)
	}
	return c.rec.Get(ctx, b.src, b.IndexColumn, b.SpareColumn)
}

// setIndex sets the index columns of b for value s in the mutation: the
// v1 index, or the recorded one's two columns, computed in the
// mutation's transaction.
func (c *Codec) setIndex(ctx context.Context, m ent.Mutation, b *bound, s string) error {
	if b.idx != nil {
		return m.SetField(b.IndexColumn, b.idx.Compute(s))
	}
	if b.SpareColumn == "" {
		return nil
	}
	x, err := c.recorded(ctx, b)
	if err != nil {
		return err
	}
	if !inTx(m) {
		return fmt.Errorf("wardent: %s.%s: %w (write it inside client.Tx)", b.Type, b.Column, ErrNoTx)
	}
	q, err := txQuerier(m)
	if err != nil {
		return fmt.Errorf("wardent: %s.%s: %w", b.Type, b.Column, err)
	}
	a, spare, err := x.WriteIn(ctx, q, s)
	if err != nil {
		return fmt.Errorf("wardent: %s.%s: %w", b.Type, b.Column, err)
	}
	if err := setOrClear(m, b.IndexColumn, a); err != nil {
		return err
	}
	return setOrClear(m, b.SpareColumn, spare)
}

// txQuerier is the mutation's client, which runs queries in the
// mutation's transaction when ent generated it with sql/execquery.
func txQuerier(m ent.Mutation) (ledger.Querier, error) {
	client, err := call(reflect.ValueOf(m), "Client")
	if err != nil {
		return nil, err
	}
	q, ok := client.Interface().(ledger.Querier)
	if !ok {
		return nil, fmt.Errorf("the generated %s runs no queries: generate the ent code with --feature sql/execquery", client.Type())
	}
	return q, nil
}

// setOrClear sets an index column to v, or to NULL for nil.
func setOrClear(m ent.Mutation, name string, v []byte) error {
	if v == nil {
		return m.ClearField(name)
	}
	return m.SetField(name, v)
}

// eqRecorded is Eq of a recorded index: the rows whose index matches
// value in either column.
func (c *Codec) eqRecorded(b *bound, value string) func(*entsql.Selector) {
	x, err := c.recorded(context.Background(), b) // recorded by Record: a cache look-up
	if err != nil {
		return func(s *entsql.Selector) { s.AddError(err) }
	}
	a, spare := x.Lookup(value)
	return func(s *entsql.Selector) {
		var or []*entsql.Predicate
		if a != nil {
			or = append(or, entsql.EQ(s.C(b.IndexColumn), a))
		}
		if spare != nil {
			or = append(or, entsql.EQ(s.C(b.SpareColumn), spare))
		}
		s.Where(entsql.Or(or...))
	}
}
