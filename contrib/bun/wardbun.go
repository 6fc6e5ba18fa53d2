// Package wardbun encrypts bun model fields with ward's field layer. An
// encrypted field has type [Text]; the model's two bun hooks call a
// [Codec], which seals every Text field before bun writes the model and
// opens it after bun scans a row (when every column, the row key and
// owners included, is known):
//
//	type Note struct {
//		bun.BaseModel `bun:"table:notes"`
//		ID     string `bun:",pk"`              // client-assigned (a UUID): the row key
//		UserID int64
//		Body   wardbun.Text `bun:"type:text" ward:"bind:user_id"`
//		Email      wardbun.Text `bun:"type:text"`
//		EmailIndex []byte `ward:"index:email"` // blind index of Email, for equality search
//	}
//	func (n *Note) BeforeAppendModel(ctx context.Context, q bun.Query) error { return codec.Seal(ctx, q, n) }
//	func (n *Note) AfterScanRow(ctx context.Context) error                 { return codec.Open(ctx, n) }
//
// The row key. A value is bound to the column named in key: (by default
// the table's single primary key). A client-assigned key (a UUID) is set
// before insert. An integer key the database assigns (bun:",pk,autoincrement",
// bigserial) is not known until the row exists: insert such rows with
// [Codec.Insert], which inserts the Text fields as NULL, then seals them
// for the assigned key and writes them in the same transaction; a plain
// NewInsert of such a row is refused ([ErrNoRowKey]). Or write key:- to
// bind to table and column only (and bind: to an owner): then a database
// writer can swap values between rows of the same table (and owner)
// undetected.
//
// Blind indexes. An index field alone is a v1 index (keyed by the
// keyring's root, never re-keyed); with a second, spare index field
// (ward:"index:email;spare") the index is recorded in the database's
// ledger, keyed by an integrity epoch and re-keyable while the
// application serves ([Codec.Record], [InTx]).
//
// A Text that was not sealed (a model without the hook) refuses to be
// written: plaintext never reaches the database. NULL stays NULL
// ([Text.Null]); a tampered or misplaced value fails in AfterScanRow with
// field's typed errors.
package wardbun

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	"github.com/wardlab/ward/contrib/internal/ormkit"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Text is an encrypted text column: plaintext in the model, a ward
// ciphertext (text form) in the database; tag it `bun:"type:text"` so that
// bun creates a text column. The zero value is the empty string; see
// [Null] for SQL NULL.
type Text struct {
	s       string
	null    bool
	ct      field.Ciphertext // as scanned, or as sealed
	sealed  bool
	pending bool // written as NULL until sealed for a key the database assigns (Codec.Insert)
}

// NewText returns a Text holding s.
func NewText(s string) Text { return Text{s: s} }

// Null returns a Text that is SQL NULL.
func Null() Text { return Text{null: true} }

// String returns the plaintext ("" for NULL).
func (t Text) String() string { return t.s }

// IsNull reports whether the value is SQL NULL.
func (t Text) IsNull() bool { return t.null }

// ErrNotSealed means a Text reached the database without being sealed:
// the model lacks the BeforeAppendModel hook.
var ErrNotSealed = errors.New("wardbun: value was not sealed (add the BeforeAppendModel hook that calls Codec.Seal)")

// Value implements driver.Valuer: the sealed ciphertext, never plaintext.
func (t Text) Value() (driver.Value, error) {
	if t.null || t.pending {
		return nil, nil
	}
	if !t.sealed {
		return nil, ErrNotSealed
	}
	return t.ct.Value()
}

// Scan implements sql.Scanner; Codec.Open decrypts afterwards.
func (t *Text) Scan(src any) error {
	*t = Text{null: src == nil}
	return t.ct.Scan(src)
}

// ErrNoRowKey means the row key was zero when a value was sealed or opened.
var ErrNoRowKey = errors.New("wardbun: the row key is not set")

// Codec seals and opens the Text fields of bun models.
type Codec struct {
	db      *bun.DB
	kr      *keyring.Keyring
	colOpts []field.ColumnOption
	cache   sync.Map // *schema.Field → *binding
	indexes *ormkit.Indexes
	rec     *ormkit.Recorded // Record
}

// New returns a Codec for models of db under kr; opts (for example
// field.AcceptPlaintext during a migration) apply to every column.
func New(db *bun.DB, kr *keyring.Keyring, opts ...field.ColumnOption) *Codec {
	return &Codec{db: db, kr: kr, colOpts: opts, indexes: ormkit.NewIndexes(kr)}
}

var textType = reflect.TypeFor[Text]()

type binding struct {
	col   *field.Column
	key   *schema.Field // nil: key:-
	bound []*schema.Field
	index *field.BlindIndex // for a v1 index field
	of    *schema.Field     // the field an index is computed from
	// For a recorded index: its two columns, and whether this field is
	// the spare.
	idxCol, spareCol string
	spare            bool
	src              ledger.Column // the indexed column, as the ledger records it
}

// Seal seals every Text field of model (a pointer to a struct) and
// computes its blind indexes, for the inserts and updates among queries q
// (bun calls BeforeAppendModel for selects too, where there is nothing to
// seal).
func (c *Codec) Seal(ctx context.Context, q bun.Query, model any) error {
	if op := q.Operation(); op != "INSERT" && op != "UPDATE" {
		return nil
	}
	return c.each(model, func(f *schema.Field, b *binding, strct reflect.Value) error {
		if b.of != nil {
			t := b.of.Value(strct).Interface().(Text)
			out := f.Value(strct)
			if t.null {
				out.SetBytes(nil)
				return nil
			}
			v, err := c.indexValue(ctx, b, t.s)
			out.SetBytes(v)
			return err
		}
		t := f.Value(strct).Addr().Interface().(*Text)
		t.pending = false
		if t.null {
			return nil
		}
		if q.Operation() == "INSERT" && b.assigned(strct) {
			if ctx.Value(insertKey{}) == nil {
				return fmt.Errorf("%w: %s.%s is bound to %s, which the database assigns: insert the row with Codec.Insert, which seals the value for the assigned key in the same transaction", ErrNoRowKey, f.Table.Name, f.Name, b.key.Name)
			}
			t.pending = true // NULL now, sealed by Codec.Insert once the key is known
			return nil
		}
		rk, err := b.row(f, strct)
		if err != nil {
			return err
		}
		if t.ct, err = b.col.SealString(rk, t.s); err != nil {
			return err
		}
		t.sealed = true
		return nil
	})
}

// insertKey marks, in a context, inserts run by Codec.Insert.
type insertKey struct{}

// assigned reports whether the row key of strct is an integer the
// database has yet to assign.
func (b *binding) assigned(strct reflect.Value) bool {
	if b.key == nil {
		return false
	}
	kv := b.key.Value(strct)
	switch kv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return kv.IsZero()
	}
	return false
}

// Insert inserts model (a pointer to a struct, or to a slice of structs or
// of pointers to them) whose row key the database assigns: in one
// transaction (db's own, if db is a bun.Tx), it inserts the row with its
// Text fields NULL, reads the assigned keys back (RETURNING), seals the
// values for them and updates the rows. Blind indexes are written by the
// insert, so a UNIQUE index refuses a duplicate before the row exists.
// Rows whose key is already set are sealed and inserted as usual.
func (c *Codec) Insert(ctx context.Context, db bun.IDB, model any) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		ctx = ormkit.WithTx(ctx, tx.Tx)
		if _, err := tx.NewInsert().Model(model).Exec(context.WithValue(ctx, insertKey{}, true)); err != nil {
			return err
		}
		var rows []any
		columns := map[string]bool{}
		err := eachStruct(model, func(row any) error {
			found := false
			err := c.each(row, func(f *schema.Field, b *binding, strct reflect.Value) error {
				if b.of == nil && f.Value(strct).Interface().(Text).pending {
					columns[f.Name] = true
					found = true
				}
				return nil
			})
			if found {
				rows = append(rows, row)
			}
			return err
		})
		if err != nil || len(rows) == 0 {
			return err
		}
		cols := slices.Sorted(maps.Keys(columns))
		for _, row := range rows {
			if _, err := tx.NewUpdate().Model(row).Column(cols...).WherePK().Exec(ctx); err != nil {
				return fmt.Errorf("wardbun: sealing %s for its assigned key: %w", strings.Join(cols, ", "), err)
			}
		}
		return nil
	})
}

// eachStruct calls fn with a pointer to model's struct, or to each struct
// of a slice model.
func eachStruct(model any, fn func(any) error) error {
	v := reflect.ValueOf(model)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("wardbun: model must be a pointer, not %T", model)
	}
	if v.Elem().Kind() != reflect.Slice {
		return fn(model)
	}
	s := v.Elem()
	for i := range s.Len() {
		e := s.Index(i)
		if e.Kind() != reflect.Pointer {
			e = e.Addr()
		}
		if err := fn(e.Interface()); err != nil {
			return err
		}
	}
	return nil
}

// Open decrypts every Text field of a scanned model.
func (c *Codec) Open(ctx context.Context, model any) error {
	return c.each(model, func(f *schema.Field, b *binding, strct reflect.Value) error {
		if b.of != nil {
			return nil
		}
		t := f.Value(strct).Addr().Interface().(*Text)
		if t.null || !t.ct.Valid() {
			return nil
		}
		rk, err := b.row(f, strct)
		if err != nil {
			return err
		}
		if t.s, err = b.col.OpenString(rk, t.ct); err != nil {
			return err
		}
		t.sealed = true // what was read may be written back as is
		return nil
	})
}

// each calls fn for every Text field and index field of model.
func (c *Codec) each(model any, fn func(*schema.Field, *binding, reflect.Value) error) error {
	v := reflect.ValueOf(model)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("wardbun: model must be a pointer to a struct, not %T", model)
	}
	strct := v.Elem()
	table := c.db.Table(strct.Type())
	for _, f := range table.Fields {
		if f.IndirectType != textType && !isIndex(f) {
			continue
		}
		b, err := c.binding(table, f)
		if err != nil {
			return err
		}
		if err := fn(f, b, strct); err != nil {
			return err
		}
	}
	return nil
}

// isIndex reports whether f is a blind-index field (ward:"index:…").
func isIndex(f *schema.Field) bool {
	tag := f.StructField.Tag.Get("ward")
	return tag != "" && ormkit.ParseTag(tag)["index"] != ""
}

func (c *Codec) binding(table *schema.Table, f *schema.Field) (*binding, error) {
	if b, ok := c.cache.Load(f); ok {
		return b.(*binding), nil
	}
	tag := ormkit.ParseTag(f.StructField.Tag.Get("ward"))
	b := &binding{}
	if of := tag["index"]; of != "" {
		if b.of = table.LookupField(of); b.of == nil || b.of.IndirectType != textType {
			return nil, fmt.Errorf("wardbun: %s.%s: index of %q, which is not a Text column", table.Name, f.Name, of)
		}
		if err := c.bindIndex(table, f, tag, b); err != nil {
			return nil, err
		}
	} else if err := c.bindRow(table, f, tag, b); err != nil {
		return nil, err
	}
	v, _ := c.cache.LoadOrStore(f, b)
	return v.(*binding), nil
}

func (c *Codec) bindRow(table *schema.Table, f *schema.Field, tag map[string]string, b *binding) error {
	switch key := tag["key"]; {
	case key == "-":
	case key != "":
		if b.key = table.LookupField(key); b.key == nil {
			return fmt.Errorf("wardbun: %s.%s: key column %q not found", table.Name, f.Name, key)
		}
	case len(table.PKs) == 1:
		b.key = table.PKs[0]
	default:
		return fmt.Errorf("wardbun: %s.%s: name the row key with ward:\"key:COLUMN\" (or key:- for none)", table.Name, f.Name)
	}
	var names []string
	for _, n := range ormkit.List(tag["bind"]) {
		bf := table.LookupField(n)
		if bf == nil {
			return fmt.Errorf("wardbun: %s.%s: bound column %q not found", table.Name, f.Name, n)
		}
		b.bound = append(b.bound, bf)
		names = append(names, bf.Name)
	}
	opts := append([]field.ColumnOption{field.WithEncoding(field.Text)}, c.colOpts...)
	if len(names) > 0 {
		opts = append(opts, field.Bind(names...))
	}
	var err error
	b.col, err = field.NewColumn(c.kr, table.Name, f.Name, opts...)
	return err
}

// row builds the row key of the model struct strct.
func (b *binding) row(f *schema.Field, strct reflect.Value) (field.RowKey, error) {
	rk := field.RowString("")
	if b.key != nil {
		kv := b.key.Value(strct)
		if kv.IsZero() {
			return rk, fmt.Errorf("%w: %s.%s is bound to %s, which is zero (assign it before insert, e.g. a UUID)", ErrNoRowKey, f.Table.Name, f.Name, b.key.Name)
		}
		var err error
		if rk, err = field.RowOf(kv.Interface()); err != nil {
			return rk, fmt.Errorf("wardbun: %s.%s: row key %s: %w", f.Table.Name, f.Name, b.key.Name, err)
		}
	}
	if len(b.bound) > 0 {
		vals := make([]any, len(b.bound))
		for i, bf := range b.bound {
			vals[i] = bf.Value(strct).Interface()
		}
		rk = rk.With(vals...)
	}
	return rk, nil
}

// Index returns the blind index of value for table.column, as a Codec
// stores it in an index field, for queries:
//
//	idx, _ := codec.Index("notes", "email", "Alice@example.com")
//	db.NewSelect().Model(&n).Where("email_index = ?", idx).Scan(ctx)
func (c *Codec) Index(table, column, value string) ([]byte, error) {
	return c.indexes.Compute(table, column, value)
}

// Eq narrows q to the rows of model whose Text field (by Go name or
// column) equals value, through the field's blind index (the field tagged
// ward:"index:…" with its name), as a query on the field would read:
//
//	var a Account
//	err := codec.Eq(db.NewSelect().Model(&a), &a, "Email", "Alice@example.com").Scan(ctx)
//
// Put the UNIQUE constraint on the index column to keep the field unique.
func (c *Codec) Eq(q *bun.SelectQuery, model any, field, value string) *bun.SelectQuery {
	t := reflect.TypeOf(model)
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return q.Err(fmt.Errorf("wardbun: Eq needs a model struct, not %T", model))
	}
	table := c.db.Table(t)
	src := table.LookupField(field)
	if src == nil {
		for _, f := range table.Fields {
			if f.GoName == field {
				src = f
			}
		}
	}
	for _, f := range table.Fields {
		if src == nil || !isIndex(f) {
			continue
		}
		b, err := c.binding(table, f) // cached: the index and the field it is of
		if err != nil {
			return q.Err(err)
		}
		if b.of == src && b.spareCol != "" {
			return c.eqRecorded(q, b, value)
		}
		if b.of == src {
			return q.Where("?TableAlias.? = ?", bun.Ident(f.Name), b.index.Compute(value))
		}
	}
	return q.Err(fmt.Errorf("wardbun: %s has no blind index of %s (a field tagged ward:\"index:%s\")", t, field, field))
}
