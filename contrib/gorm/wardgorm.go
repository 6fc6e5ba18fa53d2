// Package wardgorm encrypts GORM model fields with ward's field layer: a
// field tagged `gorm:"serializer:ward"` is sealed when it is written and
// opened when it is read, bound to its table, column, row and (optionally)
// owner fields; a `[]byte` field tagged `gorm:"serializer:ward-index"`
// holds the blind index of another field, for equality search.
//
//	type Note struct {
//		ID     string `gorm:"primaryKey"`                         // client-assigned (a UUID): the row key
//		UserID int64
//		Body   string `gorm:"serializer:ward" ward:"key:ID;bind:UserID"`
//		Email  string `gorm:"serializer:ward" ward:"key:ID"`
//		EmailIndex []byte `gorm:"serializer:ward-index;type:bytes;index" ward:"of:Email"`
//	}
//	ward := wardgorm.Register(kr) // once, before using the models
//	ward.Guard(db, &Note{})       // on each *gorm.DB: no write path stores plaintext
//
// The row key. A value is bound to its row by the field named in key: (by
// default the model's primary key). A client-assigned key (a UUID, as
// above) is known before the row is written. A key the database assigns
// on insert (autoIncrement: bigserial, AUTOINCREMENT) works with the write
// guard ([Serializer.Guard]): the row is inserted with the ward column
// NULL (so it must be nullable), and the value sealed for the assigned key
// is written in the same transaction. key:- binds to table and column
// only — then a database writer can swap the field between rows of the
// same table (and owner, if bound) undetected. Fields named in
// key: and bind: must be declared before the encrypted field, so that GORM
// has scanned them when it opens the value.
//
// Writes. Struct writes (Create, Save, Updates(&row)) go through the
// serializer. GORM passes map values (Update, Updates(map), UpdateColumn,
// Create(map)) and upsert assignments to the database without it:
// [Serializer.Guard] seals those for their row, updates blind indexes in
// the same statement, re-seals values bound to a changed owner field, and
// refuses bulk and Table(…) writes it cannot seal ([ErrUnsealable]). Raw
// SQL is not intercepted.
//
// Blind indexes. An index field alone is a v1 index (keyed by the
// keyring's root, never re-keyed); with a second, spare index field
// (ward:"of:Email;spare") the index is recorded in the database's ledger,
// keyed by an integrity epoch and re-keyable while the application serves
// ([Serializer.Record]).
//
// NULL stays NULL (a nil *string); a tampered or misplaced value fails to
// scan with field's typed errors ([field.OpenError] wrapping
// [keyring.ErrWrongContext] or [keyring.ErrAuthentication]).
package wardgorm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"gorm.io/gorm/schema"

	"github.com/wardlab/ward/contrib/internal/ormkit"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// Serializer names registered by Register.
const (
	Name      = "ward"
	IndexName = "ward-index"
)

// ErrNoRowKey means the field a value is bound to was zero when the value
// was written or read.
var ErrNoRowKey = errors.New("wardgorm: the row key is not set")

// Option configures Register.
type Option func(*Serializer)

// WithColumnOptions passes field.ColumnOption values (for example
// field.AcceptPlaintext during a migration) to every encrypted column.
func WithColumnOptions(opts ...field.ColumnOption) Option {
	return func(s *Serializer) { s.colOpts = append(s.colOpts, opts...) }
}

// Register registers the "ward" and "ward-index" serializers with GORM for
// the keyring kr. GORM's serializer registry is global: register once per
// process.
func Register(kr *keyring.Keyring, opts ...Option) *Serializer {
	s := &Serializer{kr: kr, indexes: ormkit.NewIndexes(kr)}
	for _, o := range opts {
		o(s)
	}
	schema.RegisterSerializer(Name, s)
	schema.RegisterSerializer(IndexName, indexSerializer{s})
	return s
}

// Serializer seals and opens tagged fields. It caches one field.Column and
// binding per model field.
type Serializer struct {
	kr      *keyring.Keyring
	colOpts []field.ColumnOption
	cols    sync.Map // *schema.Field → *binding
	tables  sync.Map // table name → []string: its ward and index columns (Guard)
	indexes *ormkit.Indexes

	recorded sync.Map // db.Callback() → *ormkit.Recorded (Record)
	pairs    sync.Map // indexed field → [2]*schema.Field: its index fields (pair)
}

// binding is what a tagged field is bound to.
type binding struct {
	col   *field.Column
	key   *schema.Field // nil: key:- (table and column only)
	bound []*schema.Field
}

// binding parses a field's ward tag once.
func (s *Serializer) binding(f *schema.Field) (*binding, error) {
	if b, ok := s.cols.Load(f); ok {
		return b.(*binding), nil
	}
	tag := ormkit.ParseTag(f.Tag.Get("ward"))
	b := &binding{}
	keyName := tag["key"]
	switch {
	case keyName == "-":
	case keyName != "":
		if b.key = f.Schema.LookUpField(keyName); b.key == nil {
			return nil, fmt.Errorf("wardgorm: %s.%s: key field %q not found", f.Schema.Name, f.Name, keyName)
		}
	case len(f.Schema.PrimaryFields) == 1:
		b.key = f.Schema.PrimaryFields[0]
	default:
		return nil, fmt.Errorf("wardgorm: %s.%s: name the row key with ward:\"key:FIELD\" (or key:- for none)", f.Schema.Name, f.Name)
	}
	var names []string
	for _, n := range ormkit.List(tag["bind"]) {
		bf := f.Schema.LookUpField(n)
		if bf == nil {
			return nil, fmt.Errorf("wardgorm: %s.%s: bound field %q not found", f.Schema.Name, f.Name, n)
		}
		b.bound = append(b.bound, bf)
		names = append(names, bf.DBName)
	}
	opts := append([]field.ColumnOption{field.WithEncoding(field.Text)}, s.colOpts...)
	if tag["binary"] != "" || f.FieldType == reflect.TypeOf([]byte(nil)) {
		opts[0] = field.WithEncoding(field.Binary)
	}
	if len(names) > 0 {
		opts = append(opts, field.Bind(names...))
	}
	col, err := field.NewColumn(s.kr, f.Schema.Table, f.DBName, opts...)
	if err != nil {
		return nil, err
	}
	b.col = col
	v, _ := s.cols.LoadOrStore(f, b)
	return v.(*binding), nil
}

// row builds the row key of the model dst.
func (b *binding) row(ctx context.Context, f *schema.Field, dst reflect.Value) (field.RowKey, error) {
	return b.rowWith(ctx, f, dst, nil)
}

// rowWith builds a value's row key: each of the key and bound fields from
// m when a map write sets it, else from the model row (which may be
// invalid: a map create without a model).
func (b *binding) rowWith(ctx context.Context, f *schema.Field, row reflect.Value, m map[string]any) (field.RowKey, error) {
	get := func(bf *schema.Field) (any, bool) {
		for _, k := range []string{bf.Name, bf.DBName} {
			if v, ok := m[k]; ok {
				rv := reflect.ValueOf(v)
				return v, !rv.IsValid() || rv.IsZero()
			}
		}
		if !row.IsValid() {
			return nil, true
		}
		rv := bf.ReflectValueOf(ctx, row)
		return rv.Interface(), rv.IsZero()
	}
	rk := field.RowString("")
	if b.key != nil {
		v, zero := get(b.key)
		if zero {
			return rk, fmt.Errorf("%w: %s.%s is bound to %s, which is zero (assign it before insert, e.g. a UUID; declare it before %s; a key the database assigns needs Guard)",
				ErrNoRowKey, f.Schema.Name, f.Name, b.key.Name, f.Name)
		}
		var err error
		if rk, err = field.RowOf(v); err != nil {
			return rk, fmt.Errorf("wardgorm: %s.%s: row key %s: %w", f.Schema.Name, f.Name, b.key.Name, err)
		}
	}
	if len(b.bound) > 0 {
		vals := make([]any, len(b.bound))
		for i, bf := range b.bound {
			vals[i], _ = get(bf)
		}
		rk = rk.With(vals...)
	}
	return rk, nil
}

// Value seals a field value for the database.
func (s *Serializer) Value(ctx context.Context, f *schema.Field, dst reflect.Value, fieldValue any) (any, error) {
	pt, null, err := plaintext(fieldValue)
	if err != nil || null {
		return nil, err
	}
	b, err := s.binding(f)
	if err != nil {
		return nil, err
	}
	rk, err := b.row(ctx, f, dst)
	if errors.Is(err, ErrNoRowKey) && b.key != nil && b.key.AutoIncrement {
		// The database assigns the key on insert: the guard writes NULL
		// now and the sealed value once the key is known, in the same
		// transaction (Guard's after-create callback).
		if d, ok := ctx.Value(deferKey{}).(*deferred); ok {
			d.add(f, dst, append([]byte(nil), pt...))
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	ct, err := b.col.Seal(rk, pt)
	if err != nil {
		return nil, err
	}
	return ct.Value()
}

// Scan opens a database value into the field.
func (s *Serializer) Scan(ctx context.Context, f *schema.Field, dst reflect.Value, dbValue any) error {
	out := reflect.New(f.FieldType).Elem()
	if dbValue != nil {
		b, err := s.binding(f)
		if err != nil {
			return err
		}
		var ct field.Ciphertext
		if err := ct.Scan(dbValue); err != nil {
			return err
		}
		rk, err := b.row(ctx, f, dst)
		if err != nil {
			return err
		}
		pt, err := b.col.Open(rk, ct)
		if err != nil {
			return err
		}
		if err := setPlaintext(out, pt); err != nil {
			return fmt.Errorf("wardgorm: %s.%s: %w", f.Schema.Name, f.Name, err)
		}
	}
	f.ReflectValueOf(ctx, dst).Set(out)
	return nil
}

// indexSerializer computes a blind index from another field.
type indexSerializer struct{ s *Serializer }

// Value computes the blind index of the field named in of:.
func (x indexSerializer) Value(ctx context.Context, f *schema.Field, dst reflect.Value, _ any) (any, error) {
	src := f.Schema.LookUpField(ormkit.ParseTag(f.Tag.Get("ward"))["of"])
	if src == nil {
		return nil, fmt.Errorf("wardgorm: %s.%s: name the indexed field with ward:\"of:FIELD\"", f.Schema.Name, f.Name)
	}
	pt, null, err := plaintext(src.ReflectValueOf(ctx, dst).Interface())
	if err != nil || null {
		return nil, err
	}
	return x.s.indexValue(ctx, f, src, string(pt), false)
}

// Scan stores the index as read.
func (indexSerializer) Scan(ctx context.Context, f *schema.Field, dst reflect.Value, dbValue any) error {
	var b []byte
	switch v := dbValue.(type) {
	case []byte:
		b = append([]byte(nil), v...)
	case string:
		b = []byte(v)
	}
	f.ReflectValueOf(ctx, dst).Set(reflect.ValueOf(b))
	return nil
}

// Index returns the blind index of value for table.column, as the
// "ward-index" serializer stores it (HMAC under a key for the table and
// the indexed column, case-folding normalisation), for queries:
//
//	idx, _ := s.Index("users", "email", "Alice@example.com")
//	db.Where("email_index = ?", idx).First(&u)
func (s *Serializer) Index(table, column, value string) ([]byte, error) {
	return s.indexes.Compute(table, column, value)
}

func plaintext(v any) (pt []byte, null bool, err error) {
	switch x := v.(type) {
	case nil:
		return nil, true, nil
	case string:
		return []byte(x), false, nil
	case *string:
		if x == nil {
			return nil, true, nil
		}
		return []byte(*x), false, nil
	case []byte:
		if x == nil {
			return nil, true, nil
		}
		return x, false, nil
	}
	return nil, false, fmt.Errorf("wardgorm: cannot encrypt a %T (string, *string or []byte)", v)
}

func setPlaintext(out reflect.Value, pt []byte) error {
	switch out.Interface().(type) {
	case string:
		out.SetString(string(pt))
	case *string:
		s := string(pt)
		out.Set(reflect.ValueOf(&s))
	case []byte:
		out.SetBytes(pt)
	default:
		return fmt.Errorf("cannot decrypt into %s", out.Type())
	}
	return nil
}
