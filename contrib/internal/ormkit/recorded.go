package ormkit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// ErrNoTx means a recorded blind index was to be written outside a
// transaction: its values are computed in the write's own transaction
// (ledger.Indexer.WriteTx), so that a re-key's next phase waits for it.
var ErrNoTx = errors.New("ward: a recorded blind index is written in the write's own transaction")

// Recorded are the recorded blind indexes of one database (ledger
// indexes v2, re-keyable: ledger.Indexer), one per indexed table and
// column, created and recorded in the database's ledger on first use and
// shared between goroutines. Every adapter records its indexes alike: the
// column's name as the index's name, case folding (field.Fold) and
// field.DefaultIndexSize, so that an adapter's v1 index (Indexes) is
// recorded as such with ledger.IndexerOptions.FromV1 and moved to v2 by
// a re-key (ward keyring reindex).
type Recorded struct {
	kr   *keyring.Keyring
	lg   *ledger.Ledger
	opts ledger.IndexerOptions
	mu   sync.Mutex
	m    map[string]*ledger.Indexer // "table\x00column" → its Indexer
}

// NewRecorded returns the recorded indexes of lg's database, under kr.
func NewRecorded(kr *keyring.Keyring, lg *ledger.Ledger, o ledger.IndexerOptions) *Recorded {
	return &Recorded{kr: kr, lg: lg, opts: o, m: map[string]*ledger.Indexer{}}
}

// Get returns the Indexer of the index of src (the sealed column, with
// its row key and bindings), held in columns index and spare: the first
// time, it records src and the index in the ledger (a re-key opens src's
// values to compute the new index; a rotation re-seals them).
func (r *Recorded) Get(ctx context.Context, src ledger.Column, index, spare string) (*ledger.Indexer, error) {
	key := src.Table + "\x00" + src.Column
	r.mu.Lock()
	defer r.mu.Unlock()
	x, ok := r.m[key]
	if !ok {
		if err := r.lg.RecordColumns(ctx, r.kr, src); err != nil {
			return nil, err
		}
		spec := ledger.IndexColumn{Table: src.Table, Column: src.Column, Index: index, Spare: spare}
		var err error
		if x, err = r.lg.Indexer(ctx, r.kr, spec, field.Fold, r.opts); err != nil {
			return nil, err
		}
		r.m[key] = x
	}
	if a, b := x.Columns(); a != index || b != spare {
		return nil, fmt.Errorf("ledger: blind index of %s.%s is held in %s and %s, asked for in %s and %s", src.Table, src.Column, a, b, index, spare)
	}
	return x, nil
}

// Refresh re-reads the ledger's record of every index in use
// (ledger.Indexer.Refresh), so that look-ups follow a re-key.
func (r *Recorded) Refresh(ctx context.Context) error {
	r.mu.Lock()
	xs := make([]*ledger.Indexer, 0, len(r.m))
	for _, x := range r.m {
		xs = append(xs, x)
	}
	r.mu.Unlock()
	var errs []error
	for _, x := range xs {
		errs = append(errs, x.Refresh(ctx))
	}
	return errors.Join(errs...)
}

// Watch calls Refresh every interval until ctx ends, reporting failures
// to onError (which may be nil).
func (r *Recorded) Watch(ctx context.Context, every time.Duration, onError func(error)) {
	Every(ctx, every, r.Refresh, onError)
}

// Every calls refresh every interval until ctx ends, reporting failures
// to onError (which may be nil).
func Every(ctx context.Context, every time.Duration, refresh func(context.Context) error, onError func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := refresh(ctx); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
}

// txKey carries, in a context, the transaction a write runs in.
type txKey struct{}

// WithTx returns ctx carrying tx, the transaction the writes made with it
// run in, for adapters whose hooks cannot see it (bun, ent).
func WithTx(ctx context.Context, tx *sql.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// TxFrom returns the transaction ctx carries (WithTx), or nil.
func TxFrom(ctx context.Context) *sql.Tx {
	tx, _ := ctx.Value(txKey{}).(*sql.Tx)
	return tx
}

// Values returns what the index of src stores in its two columns for a
// row whose value is value, computed in the transaction ctx carries
// (WithTx): ErrNoTx without one.
func (r *Recorded) Values(ctx context.Context, src ledger.Column, index, spare, value string) (a, b []byte, err error) {
	tx := TxFrom(ctx)
	if tx == nil {
		return nil, nil, fmt.Errorf("%s.%s: %w", src.Table, src.Column, ErrNoTx)
	}
	x, err := r.Get(ctx, src, index, spare)
	if err != nil {
		return nil, nil, err
	}
	return x.WriteTx(ctx, tx, value)
}
