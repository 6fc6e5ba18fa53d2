package wardgorm

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/wardlab/ward/contrib/internal/ormkit"
	"github.com/wardlab/ward/ledger"
)

// Recorded blind indexes. An indexed field with two index fields — the
// second tagged spare — has a recorded index (ledger.Indexer): v2, keyed
// by an integrity epoch, bound to the database, recorded in its ledger
// and re-keyed by `ward keyring reindex` while the application serves:
//
//	Email       string `gorm:"serializer:ward" ward:"key:ID"`
//	EmailIndex  []byte `gorm:"serializer:ward-index;type:bytes;uniqueIndex" ward:"of:Email"`
//	EmailIndex2 []byte `gorm:"serializer:ward-index;type:bytes;uniqueIndex" ward:"of:Email;spare"`
//
//	ward.Record(db, &ledger.Ledger{DB: sqlDB, Dialect: field.Postgres}, ledger.IndexerOptions{Gate: gate})
//	ward.Guard(db, &User{})
//	go ward.Watch(ctx, 5*time.Second, logError)
//
// Between re-keys one of the two columns holds the values and the other
// is NULL; during one, writes fill both and then the new one, and Eq
// looks in both. Each write computes its index values in its own
// transaction (GORM's default one, or db.Transaction), reading the
// ledger's record of the index under a shared lock, so that a re-key's
// next phase waits for the write: a write with SkipDefaultTransaction
// outside a transaction is refused (ErrNoTx). An index field
// without a spare is a v1 index (keyed by the keyring's root: a copy of
// the keyring file from before any rotation computes it, and it is never
// re-keyed); adding the spare field and recording with
// IndexerOptions.FromV1 records it as v1, and a re-key moves it to v2.

// ErrNoTx means a write of a model with a recorded blind index ran
// outside a transaction: nothing was written.
var ErrNoTx = ormkit.ErrNoTx

// recordKey marks, in a statement's context, the recorded indexes of its
// database and the statement's transaction.
type recordKey struct{}

type recording struct {
	rec *ormkit.Recorded
	tx  *sql.Tx // nil: no transaction
	// vals are the values the statement's guard computed, by source
	// field and plaintext: the serializer runs while database/sql holds
	// the transaction's connection for the statement, so it cannot read
	// the ledger itself.
	vals map[*schema.Field]map[string][2][]byte
}

// Record records the blind indexes of db's models that have a spare
// field in lg (the ledger of db's database), with o (o.Gate: the fleet
// gate the process acknowledges re-key phases on; o.FromV1: record a new
// index as the v1 index its rows hold). Call it before Guard, once per
// *gorm.DB from gorm.Open (its sessions share it).
func (s *Serializer) Record(db *gorm.DB, lg *ledger.Ledger, o ledger.IndexerOptions) {
	s.recorded.Store(db.Callback(), ormkit.NewRecorded(s.kr, lg, o))
}

// Refresh re-reads the ledger's record of every recorded index in use,
// so that look-ups (Eq) follow a re-key; Watch calls it periodically.
func (s *Serializer) Refresh(ctx context.Context) error {
	var err error
	s.recorded.Range(func(_, rec any) bool {
		err = rec.(*ormkit.Recorded).Refresh(ctx)
		return err == nil
	})
	return err
}

// Watch calls Refresh every interval until ctx ends, reporting failures
// to onError (which may be nil). A process that serves while an index is
// re-keyed runs it (with the fleet gate given to Record), so that the
// re-key waits for it to follow each phase.
func (s *Serializer) Watch(ctx context.Context, every time.Duration, onError func(error)) {
	ormkit.Every(ctx, every, s.Refresh, onError)
}

// attachTx puts the recorded indexes of db and the statement's
// transaction into the statement's context, for the index serializer.
func (s *Serializer) attachTx(db *gorm.DB) {
	v, ok := s.recorded.Load(db.Callback())
	if !ok {
		return
	}
	r := &recording{rec: v.(*ormkit.Recorded)}
	switch p := db.Statement.ConnPool.(type) {
	case *sql.Tx:
		r.tx = p
	case *gorm.PreparedStmtTX:
		r.tx, _ = p.Tx.(*sql.Tx)
	}
	db.Statement.Context = context.WithValue(db.Statement.Context, recordKey{}, r)
}

// pair returns the index fields of src: the index and its spare (nil for
// a v1 index), found once per field.
func (s *Serializer) pair(src *schema.Field) (idx, spare *schema.Field) {
	if p, ok := s.pairs.Load(src); ok {
		fs := p.([2]*schema.Field)
		return fs[0], fs[1]
	}
	for _, f := range src.Schema.Fields {
		if !isIndex(f) {
			continue
		}
		tag := ormkit.ParseTag(f.Tag.Get("ward"))
		if src.Schema.LookUpField(tag["of"]) != src {
			continue
		}
		if tag["spare"] != "" {
			spare = f
		} else {
			idx = f
		}
	}
	s.pairs.Store(src, [2]*schema.Field{idx, spare})
	return idx, spare
}

// indexValue returns what index field xf of src stores for the value pt:
// a v1 index computed here, or a recorded index's value computed in the
// write's transaction — by the guard (compute), or earlier by the guard
// for the serializer.
func (s *Serializer) indexValue(ctx context.Context, xf, src *schema.Field, pt string, compute bool) (any, error) {
	idx, spare := s.pair(src)
	if idx == nil {
		return nil, fmt.Errorf("wardgorm: %s.%s: a spare index field without its index field (ward:\"of:%s\")", src.Schema.Name, src.Name, src.Name)
	}
	if spare == nil {
		return s.Index(src.Schema.Table, src.DBName, pt)
	}
	r, _ := ctx.Value(recordKey{}).(*recording)
	if r == nil {
		return nil, fmt.Errorf("wardgorm: %s.%s has a recorded blind index: call Record and Guard on the *gorm.DB that writes it", src.Schema.Name, src.Name)
	}
	v, ok := r.vals[src][pt]
	if !ok && !compute {
		return nil, fmt.Errorf("wardgorm: %s.%s: the recorded blind index of this write was not computed by the guard (a write path the guard does not see)", src.Schema.Name, src.Name)
	}
	if !ok {
		a, b, err := s.compute(ctx, r, src, idx, spare, pt)
		if err != nil {
			return nil, err
		}
		v = [2][]byte{a, b}
	}
	out := v[0]
	if xf == spare {
		out = v[1]
	}
	if out == nil {
		return nil, nil
	}
	return out, nil
}

// compute computes src's recorded index of pt in the statement's
// transaction and keeps it for the serializer.
func (s *Serializer) compute(ctx context.Context, r *recording, src, idx, spare *schema.Field, pt string) (a, b []byte, err error) {
	col, err := s.sourceColumn(src)
	if err != nil {
		return nil, nil, err
	}
	if a, b, err = r.rec.Values(ormkit.WithTx(ctx, r.tx), col, idx.DBName, spare.DBName, pt); err != nil {
		return nil, nil, fmt.Errorf("wardgorm: %w (leave GORM's default transaction on, or write in db.Transaction)", err)
	}
	if r.vals == nil {
		r.vals = map[*schema.Field]map[string][2][]byte{}
	}
	if r.vals[src] == nil {
		r.vals[src] = map[string][2][]byte{}
	}
	r.vals[src][pt] = [2][]byte{a, b}
	return a, b, nil
}

// prepareRows computes, before the statement runs, the recorded indexes
// of the model rows it writes (a struct create or save), for the
// serializer.
func (s *Serializer) prepareRows(db *gorm.DB) error {
	stmt := db.Statement
	r, _ := stmt.Context.Value(recordKey{}).(*recording)
	if r == nil || stmt.Schema == nil {
		return nil
	}
	var rows []reflect.Value
	switch rv := reflect.Indirect(stmt.ReflectValue); rv.Kind() {
	case reflect.Struct:
		rows = append(rows, rv)
	case reflect.Slice, reflect.Array:
		for i := range rv.Len() {
			rows = append(rows, reflect.Indirect(rv.Index(i)))
		}
	}
	for _, src := range stmt.Schema.Fields {
		idx, spare := s.pair(src)
		if !isWard(src) || idx == nil || spare == nil {
			continue
		}
		for _, row := range rows {
			if row.Kind() != reflect.Struct || row.Type() != stmt.Schema.ModelType {
				continue
			}
			pt, null, err := plaintext(src.ReflectValueOf(stmt.Context, row).Interface())
			if err != nil || null {
				continue
			}
			if _, _, err := s.compute(stmt.Context, r, src, idx, spare, string(pt)); err != nil {
				return err
			}
		}
	}
	return nil
}

// indexer returns the Indexer of src's recorded index, recording src and
// the index in the ledger the first time.
func (s *Serializer) indexer(ctx context.Context, rec *ormkit.Recorded, src, idx, spare *schema.Field) (*ledger.Indexer, error) {
	col, err := s.sourceColumn(src)
	if err != nil {
		return nil, err
	}
	return rec.Get(ctx, col, idx.DBName, spare.DBName)
}

// sourceColumn describes the indexed field src for the ledger.
func (s *Serializer) sourceColumn(src *schema.Field) (ledger.Column, error) {
	b, err := s.binding(src)
	if err != nil {
		return ledger.Column{}, err
	}
	key := ""
	if b.key != nil {
		key = b.key.DBName
	}
	return ledger.ColumnOf(b.col, key), nil
}

// recordIndexes records, in db's ledger, the recorded indexes of sch.
func (s *Serializer) recordIndexes(db *gorm.DB, sch *schema.Schema) error {
	v, ok := s.recorded.Load(db.Callback())
	if !ok {
		return nil
	}
	for _, f := range sch.Fields {
		if !isWard(f) {
			continue
		}
		if idx, spare := s.pair(f); idx != nil && spare != nil {
			if _, err := s.indexer(db.Statement.Context, v.(*ormkit.Recorded), f, idx, spare); err != nil {
				return fmt.Errorf("wardgorm: recording the blind index of %s.%s: %w", sch.Table, f.DBName, err)
			}
		}
	}
	return nil
}

// eqRecorded narrows db to the rows whose recorded index of src matches
// value, in either column.
func (s *Serializer) eqRecorded(db *gorm.DB, model any, src, idx, spare *schema.Field, value string) *gorm.DB {
	v, ok := s.recorded.Load(db.Callback())
	if !ok {
		db = db.Session(&gorm.Session{})
		db.AddError(fmt.Errorf("wardgorm: %s.%s has a recorded blind index: call Record on the *gorm.DB that reads it", src.Schema.Name, src.Name))
		return db
	}
	x, err := s.indexer(db.Statement.Context, v.(*ormkit.Recorded), src, idx, spare)
	if err != nil {
		db = db.Session(&gorm.Session{})
		db.AddError(err)
		return db
	}
	a, b := x.Lookup(value)
	ca, cb := x.Columns()
	var or []clause.Expression
	if a != nil {
		or = append(or, clause.Eq{Column: clause.Column{Table: src.Schema.Table, Name: ca}, Value: a})
	}
	if b != nil {
		or = append(or, clause.Eq{Column: clause.Column{Table: src.Schema.Table, Name: cb}, Value: b})
	}
	return db.Model(model).Where(clause.Or(or...))
}
