// Package wardent encrypts fields of ent entities with ward's field layer.
// A mutation hook seals the declared fields before ent writes them, and a
// query interceptor opens them in the entities ent returns, so the
// program sees plaintext and the database holds ciphertext (text form, in
// a Text column):
//
//	codec, err := wardent.New(kr, []wardent.Field{
//		{Type: "Note", Table: "notes", Column: "body", Bind: []string{"user_id"}},
//		{Type: "Note", Table: "notes", Column: "email", IndexColumn: "email_index"},
//	})
//	client.Use(codec.Hook())
//	client.Intercept(codec.Interceptor())
//
// The row key is the entity's ID. One the program assigns (a UUID, with
// SetID) is known before the row exists. An integer ID the database
// assigns (bigserial, AUTOINCREMENT) works inside a transaction
// (client.Tx): the create inserts the encrypted fields as NULL (declare
// them Optional), then seals them for the assigned ID and writes them with
// an UpdateOneID in the same transaction; outside one it is refused
// ([ErrNoRowKey]). Key "-" binds to table and column only (a database
// writer can then swap values between rows of the same table and owner).
// Upserts (OnConflict) seal the inserted value; a value an upsert sets
// itself (Update(func(u) { u.SetBody(v) })) is SQL ent builds outside the
// mutation, which no hook sees: do not use it on encrypted fields. Bulk updates of an
// encrypted field are refused: every value is sealed for its own row. A
// change of a field values are bound to (SetUserID) re-seals them for the
// new owner in the same mutation (UpdateOne), or is refused (bulk,
// [ErrOwnerChange]).
// NULL stays NULL; a tampered or misplaced value fails the query with
// field's typed errors. An IndexColumn alone holds a v1 blind index; with
// a SpareColumn beside it the index is recorded in the database's ledger
// and re-keyable ([Codec.Record]; writes in client.Tx, code generated with
// the sql/execquery feature).
package wardent

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"entgo.io/ent"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/wardlab/ward/contrib/internal/ormkit"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Field declares an encrypted field of an ent schema.
type Field struct {
	// Type is the schema's name ("Note"); Table its table ("notes").
	Type, Table string
	// Column is the field's name in the schema (and the column's).
	Column string
	// Bind names fields whose values the ciphertext is bound to (owners).
	Bind []string
	// Key is "-" to bind to table and column only; empty binds to the ID.
	Key string
	// IndexColumn, if set, names a Bytes field that receives the field's
	// blind index (case-folded), for equality search.
	IndexColumn string
	// SpareColumn, if set beside IndexColumn, names a second Bytes field:
	// the index is then recorded in the database's ledger and re-keyable
	// (Codec.Record; see "Recorded blind indexes").
	SpareColumn string
}

// ErrNoRowKey means the entity's ID was not set when a value was sealed.
var ErrNoRowKey = errors.New("wardent: the row key (the entity's ID) is not set")

// ErrBulkUpdate means a bulk update tried to set an encrypted field.
var ErrBulkUpdate = errors.New("wardent: an encrypted field can only be set per entity (UpdateOne), not in a bulk update")

// Codec seals and opens the declared fields.
type Codec struct {
	kr      *keyring.Keyring
	fields  map[string][]*bound // by schema type
	indexes *ormkit.Indexes
	rec     *ormkit.Recorded // Record
}

type bound struct {
	Field
	col *field.Column
	idx *field.BlindIndex // a v1 index (no SpareColumn)
	src ledger.Column     // the sealed column, as a recorded index records it
}

// New returns a Codec for the declared fields under kr; opts (for example
// field.AcceptPlaintext during a migration) apply to every column.
func New(kr *keyring.Keyring, fields []Field, opts ...field.ColumnOption) (*Codec, error) {
	c := &Codec{kr: kr, fields: map[string][]*bound{}, indexes: ormkit.NewIndexes(kr)}
	for _, f := range fields {
		o := append([]field.ColumnOption{field.WithEncoding(field.Text)}, opts...)
		if len(f.Bind) > 0 {
			o = append(o, field.Bind(f.Bind...))
		}
		col, err := field.NewColumn(kr, f.Table, f.Column, o...)
		if err != nil {
			return nil, err
		}
		key := "id"
		if f.Key == "-" {
			key = ""
		}
		b := &bound{Field: f, col: col, src: ledger.ColumnOf(col, key)}
		if f.SpareColumn != "" && f.IndexColumn == "" {
			return nil, fmt.Errorf("wardent: %s.%s has a SpareColumn without its IndexColumn", f.Type, f.Column)
		}
		if f.IndexColumn != "" && f.SpareColumn == "" {
			if b.idx, err = c.indexes.Get(f.Table, f.Column); err != nil {
				return nil, err
			}
		}
		c.fields[f.Type] = append(c.fields[f.Type], b)
	}
	return c, nil
}

// Index returns the blind index of value for a field with a v1 index,
// for queries: note.EmailIndex(idx). A recorded index is in two columns
// that a re-key changes: query it with Eq.
func (c *Codec) Index(table, column, value string) ([]byte, error) {
	for _, bs := range c.fields {
		for _, b := range bs {
			if b.Table == table && b.Column == column && b.SpareColumn != "" {
				return nil, fmt.Errorf("wardent: %s.%s has a recorded blind index: query it with Codec.Eq", table, column)
			}
		}
	}
	return c.indexes.Compute(table, column, value)
}

// Hook returns the mutation hook that seals declared fields.
func (c *Codec) Hook() ent.Hook {
	return func(next ent.Mutator) ent.Mutator {
		return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
			later, err := c.seal(ctx, m)
			if err != nil {
				return nil, err
			}
			v, err := next.Mutate(ctx, m)
			if err != nil {
				return v, err
			}
			// The entity a create or update returns holds plaintext too.
			if err := c.open(reflect.ValueOf(v)); err != nil {
				return v, err
			}
			return v, c.sealAssigned(ctx, m, v, later)
		})
	}
}

// ErrOwnerChange means a bulk update changed a field that encrypted fields
// are bound to: each row's values would have to be re-sealed.
var ErrOwnerChange = errors.New("wardent: a bulk update changes a field that encrypted fields are bound to")

// assigned is a value whose row key the database assigns on insert: it is
// sealed and written once the entity has its ID.
type assigned struct {
	b  *bound
	pt string
}

// seal seals the declared fields the mutation sets, and returns the values
// of a create whose ID the database assigns, inserted as NULL, for
// sealAssigned.
func (c *Codec) seal(ctx context.Context, m ent.Mutation) (later []assigned, err error) {
	for _, b := range c.fields[m.Type()] {
		l, err := c.sealField(ctx, m, b)
		if err != nil {
			return nil, err
		}
		if l != nil {
			later = append(later, *l)
		}
	}
	return later, nil
}

func (c *Codec) sealField(ctx context.Context, m ent.Mutation, b *bound) (*assigned, error) {
	v, set := m.Field(b.Column)
	if !set && !m.FieldCleared(b.Column) && b.ownerChanged(m) {
		// An owner changes and the value bound to it does not: re-seal the
		// stored value for the new owner (one entity, in the mutation's
		// transaction), or refuse a bulk change.
		if !m.Op().Is(ent.OpUpdateOne) {
			return nil, fmt.Errorf("%w: %s, which %s.%s is bound to (update each entity with UpdateOne)", ErrOwnerChange, strings.Join(b.Bind, ", "), b.Type, b.Column)
		}
		old, err := m.OldField(ctx, b.Column) // opened by the interceptor, under the old owner
		if err != nil {
			return nil, fmt.Errorf("wardent: re-sealing %s.%s for its new owner: %w", b.Type, b.Column, err)
		}
		switch o := old.(type) {
		case string:
			v, set = o, true
		case *string:
			if o == nil {
				return nil, nil // NULL stays NULL
			}
			v, set = *o, true
		default:
			return nil, fmt.Errorf("wardent: %s.%s holds a %T, want a string", b.Type, b.Column, old)
		}
	}
	if !set {
		return nil, nil
	}
	if !m.Op().Is(ent.OpCreate | ent.OpUpdateOne) {
		return nil, fmt.Errorf("%w: %s.%s", ErrBulkUpdate, b.Type, b.Column)
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("wardent: %s.%s holds a %T, want a string", b.Type, b.Column, v)
	}
	if err := c.setIndex(ctx, m, b, s); err != nil {
		return nil, err
	}
	if later, err := b.deferAssigned(m, s); later != nil || err != nil {
		return later, err
	}
	rk, err := b.rowOfMutation(ctx, m)
	if err != nil {
		return nil, err
	}
	ct, err := b.col.SealString(rk, s)
	if err != nil {
		return nil, err
	}
	text, _ := ct.Value()
	return nil, m.SetField(b.Column, text)
}

// deferAssigned takes the value of a create whose integer ID is not set
// (the database assigns it) out of the insert, to be sealed for the
// assigned ID in the same transaction; such a create must run in one
// (client.Tx), or the row would exist for a moment, or for good after a
// crash, without its value.
func (b *bound) deferAssigned(m ent.Mutation, s string) (*assigned, error) {
	if b.Key == "-" || !m.Op().Is(ent.OpCreate) {
		return nil, nil
	}
	if _, ok := mutationID(m); ok || !integerID(m) {
		return nil, nil
	}
	if !inTx(m) {
		return nil, fmt.Errorf("%w: %s.%s is bound to the ID the database assigns: create it inside a transaction (client.Tx), so that the value is sealed for the ID and written in the same transaction", ErrNoRowKey, b.Type, b.Column)
	}
	if err := m.ResetField(b.Column); err != nil { // inserted as NULL
		return nil, err
	}
	return &assigned{b: b, pt: s}, nil
}

// sealAssigned seals the values deferred by deferAssigned for the ID the
// database gave the created entity v, writes them with an UpdateOneID on
// the mutation's transaction (through this hook, which seals them), and
// sets their plaintext in v.
func (c *Codec) sealAssigned(ctx context.Context, m ent.Mutation, v ent.Value, later []assigned) error {
	if len(later) == 0 {
		return nil
	}
	ev := reflect.ValueOf(v)
	if ev.Kind() != reflect.Pointer || ev.IsNil() || ev.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("wardent: a create of %s returned %T, not an entity", m.Type(), v)
	}
	id := ev.Elem().FieldByName("ID")
	if !id.IsValid() || id.IsZero() {
		return fmt.Errorf("%w: the database assigned no ID to the %s", ErrNoRowKey, m.Type())
	}
	// The generated update of this entity type on the mutation's client
	// (its transaction): client.<Type>.UpdateOneID(id).
	client, err := call(reflect.ValueOf(m), "Client")
	if err != nil {
		return err
	}
	one, err := call(client.Elem().FieldByName(m.Type()), "UpdateOneID", id)
	if err != nil {
		return err
	}
	mv, err := call(one, "Mutation")
	if err != nil {
		return err
	}
	um, ok := mv.Interface().(ent.Mutation)
	if !ok {
		return fmt.Errorf("wardent: the %s update has no mutation", m.Type())
	}
	for _, a := range later {
		if err := um.SetField(a.b.Column, a.pt); err != nil {
			return err
		}
	}
	out, err := call(one, "Exec", reflect.ValueOf(ctx))
	if err != nil {
		return err
	}
	if err, _ := out.Interface().(error); err != nil {
		return fmt.Errorf("wardent: sealing %s for its assigned ID: %w", m.Type(), err)
	}
	for _, a := range later {
		setString(ev.Elem().FieldByName(goName(a.b.Column)), a.pt)
	}
	return nil
}

// call calls v's method name with args and returns its first result; a
// generated client without it (another template) is an error, not a panic.
func call(v reflect.Value, name string, args ...reflect.Value) (reflect.Value, error) {
	if !v.IsValid() {
		return reflect.Value{}, fmt.Errorf("wardent: the generated code has no receiver for %s", name)
	}
	meth := v.MethodByName(name)
	if !meth.IsValid() || meth.Type().NumIn() != len(args) || meth.Type().NumOut() == 0 {
		return reflect.Value{}, fmt.Errorf("wardent: the generated %s has no method %s of %d arguments", v.Type(), name, len(args))
	}
	return meth.Call(args)[0], nil
}

// setString sets a string or *string field to s.
func setString(fv reflect.Value, s string) {
	switch {
	case fv.Kind() == reflect.String:
		fv.SetString(s)
	case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.String:
		fv.Set(reflect.ValueOf(&s))
	}
}

// integerID reports whether the mutation's ID is an integer, which the
// database may assign.
func integerID(m ent.Mutation) bool {
	meth, ok := pairMethod(m, "ID")
	if !ok {
		return false
	}
	switch meth.Type().Out(0).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// pairMethod finds a generated mutation's method name of no arguments and
// two results (ID, Tx).
func pairMethod(m ent.Mutation, name string) (reflect.Value, bool) {
	meth := reflect.ValueOf(m).MethodByName(name)
	return meth, meth.IsValid() && meth.Type().NumIn() == 0 && meth.Type().NumOut() == 2
}

// inTx reports whether the generated mutation runs in a transaction.
func inTx(m ent.Mutation) bool {
	meth, ok := pairMethod(m, "Tx")
	return ok && meth.Call(nil)[1].IsNil()
}

// ownerChanged reports whether the mutation sets a field b is bound to.
func (b *bound) ownerChanged(m ent.Mutation) bool {
	for _, name := range b.Bind {
		if _, ok := m.Field(name); ok {
			return true
		}
	}
	return false
}

// rowOfMutation builds the row key from the mutation: its ID and bound
// fields (changed in this mutation, or as stored, for UpdateOne).
func (b *bound) rowOfMutation(ctx context.Context, m ent.Mutation) (field.RowKey, error) {
	rk := field.RowString("")
	if b.Key != "-" {
		id, ok := mutationID(m)
		if !ok {
			return rk, fmt.Errorf("%w: %s.%s (assign it before create: SetID, e.g. a UUID)", ErrNoRowKey, b.Type, b.Column)
		}
		var err error
		if rk, err = field.RowOf(id); err != nil {
			return rk, fmt.Errorf("wardent: %s.%s: %w", b.Type, b.Column, err)
		}
	}
	if len(b.Bind) == 0 {
		return rk, nil
	}
	vals := make([]any, len(b.Bind))
	for i, name := range b.Bind {
		v, ok := m.Field(name)
		if !ok && m.Op().Is(ent.OpUpdateOne) {
			var err error
			if v, err = m.OldField(ctx, name); err != nil {
				return rk, fmt.Errorf("wardent: %s.%s: bound field %s: %w", b.Type, b.Column, name, err)
			}
		} else if !ok {
			return rk, fmt.Errorf("wardent: %s.%s: bound field %s is not set", b.Type, b.Column, name)
		}
		vals[i] = v
	}
	return rk.With(vals...), nil
}

// mutationID calls the generated mutation's ID method.
func mutationID(m ent.Mutation) (any, bool) {
	meth, ok := pairMethod(m, "ID")
	if !ok {
		return nil, false
	}
	out := meth.Call(nil)
	if !out[1].Bool() || out[0].IsZero() {
		return nil, false
	}
	return out[0].Interface(), true
}

// Interceptor returns the query interceptor that opens declared fields in
// the entities a query returns.
func (c *Codec) Interceptor() ent.Interceptor {
	return ent.InterceptFunc(func(next ent.Querier) ent.Querier {
		return ent.QuerierFunc(func(ctx context.Context, q ent.Query) (ent.Value, error) {
			v, err := next.Query(ctx, q)
			if err != nil {
				return v, err
			}
			return v, c.open(reflect.ValueOf(v))
		})
	})
}

// open opens the declared fields of an entity, or of each in a slice.
func (c *Codec) open(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Slice:
		for i := range v.Len() {
			if err := c.open(v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Pointer:
		if v.IsNil() || v.Elem().Kind() != reflect.Struct {
			return nil
		}
	default:
		return nil
	}
	strct := v.Elem()
	for _, b := range c.fields[strct.Type().Name()] {
		if err := b.openField(strct); err != nil {
			return err
		}
	}
	return nil
}

func (b *bound) openField(strct reflect.Value) error {
	fv := strct.FieldByName(goName(b.Column))
	if !fv.IsValid() {
		return fmt.Errorf("wardent: %s has no field for column %s", strct.Type(), b.Column)
	}
	var stored any
	switch {
	case fv.Kind() == reflect.String:
		stored = fv.String()
	case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.String:
		if fv.IsNil() {
			return nil // NULL
		}
		stored = fv.Elem().String()
	default:
		return fmt.Errorf("wardent: %s.%s is a %s, want a string", b.Type, b.Column, fv.Type())
	}
	var ct field.Ciphertext
	if err := ct.Scan(stored); err != nil {
		return err
	}
	rk, err := b.rowOfEntity(strct)
	if err != nil {
		return err
	}
	pt, err := b.col.OpenString(rk, ct)
	if err != nil {
		return err
	}
	setString(fv, pt)
	return nil
}

func (b *bound) rowOfEntity(strct reflect.Value) (field.RowKey, error) {
	rk := field.RowString("")
	if b.Key != "-" {
		id := strct.FieldByName("ID")
		if !id.IsValid() || id.IsZero() {
			return rk, fmt.Errorf("%w: select the ID with %s.%s", ErrNoRowKey, b.Type, b.Column)
		}
		var err error
		if rk, err = field.RowOf(id.Interface()); err != nil {
			return rk, fmt.Errorf("wardent: %s.%s: %w", b.Type, b.Column, err)
		}
	}
	if len(b.Bind) == 0 {
		return rk, nil
	}
	vals := make([]any, len(b.Bind))
	for i, name := range b.Bind {
		f := strct.FieldByName(goName(name))
		if !f.IsValid() {
			return rk, fmt.Errorf("wardent: %s has no field for bound column %s", strct.Type(), name)
		}
		vals[i] = f.Interface()
	}
	return rk.With(vals...), nil
}

// goName is ent's Go name of a field: "user_id" → "UserID".
func goName(column string) string {
	var b strings.Builder
	for _, part := range strings.Split(column, "_") {
		switch part {
		case "id", "url", "uuid", "ip", "html", "json", "sql", "api":
			b.WriteString(strings.ToUpper(part))
		default:
			if part != "" {
				b.WriteString(strings.ToUpper(part[:1]) + part[1:])
			}
		}
	}
	return b.String()
}

// Eq returns a predicate on the entities of schema type typ whose field
// column equals value, through the field's blind index (its IndexColumn),
// as a predicate on the field would read:
//
//	a, err := client.Account.Query().Where(codec.Eq("Account", "email", "Alice@example.com")).Only(ctx)
//
// A field without an index column fails the query. Put the UNIQUE
// constraint on the index column to keep the field unique. A recorded
// index (SpareColumn) is looked for in both its columns, as the ledger's
// record of the index says (after Record; Watch follows re-keys).
func (c *Codec) Eq(typ, column, value string) func(*entsql.Selector) {
	for _, b := range c.fields[typ] {
		if b.Column == column && b.SpareColumn != "" {
			return c.eqRecorded(b, value)
		}
		if b.Column == column && b.idx != nil {
			idx := b.idx.Compute(value)
			return func(s *entsql.Selector) { s.Where(entsql.EQ(s.C(b.IndexColumn), idx)) }
		}
	}
	return func(s *entsql.Selector) {
		s.AddError(fmt.Errorf("wardent: %s.%s has no blind index (declare IndexColumn)", typ, column))
	}
}
