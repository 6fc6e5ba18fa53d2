package wardbun

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/wardlab/ward/contrib/internal/ormkit"
	"github.com/wardlab/ward/ledger"
)

// Recorded blind indexes. A Text field with two index fields — the second
// tagged spare — has a recorded index (ledger.Indexer): v2, keyed by an
// integrity epoch, bound to the database, recorded in its ledger and
// re-keyed by `ward keyring reindex` while the application serves:
//
//	Email       wardbun.Text `bun:"type:text"`
//	EmailIndex  []byte       `bun:",unique" ward:"index:email"`
//	EmailIndex2 []byte       `bun:",unique" ward:"index:email;spare"`
//
//	err := codec.Record(ctx, &ledger.Ledger{DB: sqlDB, Dialect: field.Postgres}, ledger.IndexerOptions{Gate: gate}, &User{})
//	go codec.Watch(ctx, 5*time.Second, logError)
//	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
//		_, err := tx.NewInsert().Model(&u).Exec(wardbun.InTx(ctx, tx))
//		return err
//	})
//
// A write computes its index values in its own transaction, reading the
// ledger's record of the index under a shared lock, so that a re-key's
// next phase waits for it; bun's hooks do not see the transaction, so the
// write's context carries it (InTx; Codec.Insert does it itself). A write
// without one is refused (ErrNoTx). Between re-keys one column
// holds the values and the other is NULL; during one, writes fill both
// and then the new one, and Eq looks in both. An index field without a
// spare is a v1 index (keyed by the keyring's root: a copy of the keyring
// file from before any rotation computes it, and it is never re-keyed);
// adding the spare field and recording with IndexerOptions.FromV1 records
// it as v1, and a re-key moves it to v2.

// ErrNoTx means a write of a model with a recorded blind index ran
// outside a transaction: nothing was written.
var ErrNoTx = ormkit.ErrNoTx

// InTx returns ctx carrying tx, for the writes of models with a recorded
// blind index made in tx.
func InTx(ctx context.Context, tx bun.Tx) context.Context { return ormkit.WithTx(ctx, tx.Tx) }

// Record records in lg (the ledger of the Codec's database) the blind
// indexes of models that have a spare field, with o (o.Gate: the fleet
// gate the process acknowledges re-key phases on; o.FromV1: record a new
// index as the v1 index its rows hold). Call it once, at start, with
// every model that has one; a model first used later is recorded then.
func (c *Codec) Record(ctx context.Context, lg *ledger.Ledger, o ledger.IndexerOptions, models ...any) error {
	c.rec = ormkit.NewRecorded(c.kr, lg, o)
	for _, m := range models {
		t := reflect.TypeOf(m)
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return fmt.Errorf("wardbun: Record needs model structs, not %T", m)
		}
		table := c.db.Table(t)
		for _, f := range table.Fields {
			if !isIndex(f) {
				continue
			}
			b, err := c.binding(table, f)
			if err != nil {
				return err
			}
			if b.spareCol != "" && !b.spare {
				if _, err := c.rec.Get(ctx, b.src, b.idxCol, b.spareCol); err != nil {
					return fmt.Errorf("wardbun: recording the blind index of %s.%s: %w", table.Name, b.of.Name, err)
				}
			}
		}
	}
	return nil
}

// Refresh re-reads the ledger's record of every recorded index in use, so
// that look-ups (Eq) follow a re-key; Watch calls it periodically.
func (c *Codec) Refresh(ctx context.Context) error {
	if c.rec == nil {
		return nil
	}
	return c.rec.Refresh(ctx)
}

// Watch calls Refresh every interval until ctx ends, reporting failures
// to onError (which may be nil). A process that serves while an index is
// re-keyed runs it (with the fleet gate given to Record), so that the
// re-key waits for it to follow each phase.
func (c *Codec) Watch(ctx context.Context, every time.Duration, onError func(error)) {
	if c.rec != nil {
		c.rec.Watch(ctx, every, onError)
	}
}

// bindIndex binds index field f (tag index:COLUMN[;spare]): a v1 index,
// or one of the two columns of a recorded index.
func (c *Codec) bindIndex(table *schema.Table, f *schema.Field, tag map[string]string, b *binding) error {
	b.spare = tag["spare"] != ""
	for _, o := range table.Fields {
		if o == f || !isIndex(o) {
			continue
		}
		otag := ormkit.ParseTag(o.StructField.Tag.Get("ward"))
		if table.LookupField(otag["index"]) != b.of || (otag["spare"] != "") == b.spare {
			continue
		}
		b.idxCol, b.spareCol = f.Name, o.Name
		if b.spare {
			b.idxCol, b.spareCol = o.Name, f.Name
		}
	}
	if b.spareCol == "" {
		if b.spare {
			return fmt.Errorf("wardbun: %s.%s: a spare index field without its index field (ward:\"index:%s\")", table.Name, f.Name, b.of.Name)
		}
		idx, err := c.indexes.Get(table.Name, b.of.Name)
		b.index = idx
		return err
	}
	sb, err := c.binding(table, b.of)
	if err != nil {
		return err
	}
	key := ""
	if sb.key != nil {
		key = sb.key.Name
	}
	b.src = ledger.ColumnOf(sb.col, key)
	return nil
}

// indexValue returns what index field b stores for value.
func (c *Codec) indexValue(ctx context.Context, b *binding, value string) ([]byte, error) {
	if b.spareCol == "" {
		return b.index.Compute(value), nil
	}
	if c.rec == nil {
		return nil, fmt.Errorf("wardbun: %s.%s has a recorded blind index: call Codec.Record", b.src.Table, b.src.Column)
	}
	a, s, err := c.rec.Values(ctx, b.src, b.idxCol, b.spareCol, value)
	if err != nil {
		return nil, fmt.Errorf("wardbun: %w (write in a transaction with wardbun.InTx, or with Codec.Insert)", err)
	}
	if b.spare {
		return s, nil
	}
	return a, nil
}

// eqRecorded narrows q to the rows whose recorded index matches value in
// either column.
func (c *Codec) eqRecorded(q *bun.SelectQuery, b *binding, value string) *bun.SelectQuery {
	if c.rec == nil {
		return q.Err(fmt.Errorf("wardbun: %s.%s has a recorded blind index: call Codec.Record", b.src.Table, b.src.Column))
	}
	x, err := c.rec.Get(context.Background(), b.src, b.idxCol, b.spareCol) // recorded by Record: a cache look-up
	if err != nil {
		return q.Err(err)
	}
	a, s := x.Lookup(value)
	return q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		if a != nil {
			q = q.WhereOr("?TableAlias.? = ?", bun.Ident(b.idxCol), a)
		}
		if s != nil {
			q = q.WhereOr("?TableAlias.? = ?", bun.Ident(b.spareCol), s)
		}
		return q
	})
}
