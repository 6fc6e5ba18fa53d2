package wardgorm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/wardlab/ward/contrib/internal/ormkit"
	"github.com/wardlab/ward/field"
)

// The write guard. GORM passes the values of map updates (Update,
// Updates(map), UpdateColumn(s), Create(map)) and of upsert assignments to
// the database as they are, without the field's serializer: without a
// guard, plaintext reaches a ward column with no error. Guard installs
// callbacks that, before each create and update, seal such values for
// their row (the model's primary key and bound fields, or the map's),
// update the blind indexes computed from them in the same statement,
// re-seal the values bound to an owner field the statement changes (one
// row, in the statement's transaction), and refuse — before anything is
// written — what they cannot seal: a bulk update of a ward column or of an
// owner column a ward column is bound to, an SQL expression assigned to a
// ward column, an upsert assigning one a value, and Table("…") updates of
// a table with ward columns. Raw SQL (Exec, Raw) is not intercepted.

// ErrUnsealable means a write would store a ward column's value without
// sealing it for its row; nothing was written.
var ErrUnsealable = errors.New("wardgorm: this write cannot seal a ward column")

// Guard installs the write guard on db (a *gorm.DB from gorm.Open; the
// callbacks apply to every session derived from it). models are the
// models with ward fields, parsed at once so that Table("…") updates of
// their tables are recognised.
func (s *Serializer) Guard(db *gorm.DB, models ...any) error {
	for _, m := range models {
		stmt := &gorm.Statement{DB: db}
		if err := stmt.Parse(m); err != nil {
			return fmt.Errorf("wardgorm: parsing %T: %w", m, err)
		}
		s.noteSchema(stmt.Schema)
		if err := s.recordIndexes(db, stmt.Schema); err != nil {
			return err
		}
	}
	cb := db.Callback()
	if err := cb.Create().After("gorm:begin_transaction").Before("gorm:create").Register("ward:guard_create", s.guardCreate); err != nil {
		return err
	}
	if err := cb.Create().After("gorm:create").Register("ward:seal_assigned_keys", s.sealDeferred); err != nil {
		return err
	}
	if err := cb.Update().After("gorm:setup_reflect_value").Before("gorm:update").Register("ward:guard_update", s.guardUpdate); err != nil {
		return err
	}
	return cb.Update().After("gorm:update").Register("ward:restore_plaintext", restorePlaintext)
}

// noteSchema records which columns of a table are ward columns.
func (s *Serializer) noteSchema(sch *schema.Schema) {
	if sch == nil {
		return
	}
	var cols []string
	for _, f := range sch.Fields {
		if isWard(f) || isIndex(f) {
			cols = append(cols, f.DBName)
		}
	}
	if len(cols) > 0 {
		s.tables.Store(sch.Table, cols)
	}
}

func isWard(f *schema.Field) bool  { return f.TagSettings["SERIALIZER"] == Name }
func isIndex(f *schema.Field) bool { return f.TagSettings["SERIALIZER"] == IndexName }

// wardFields returns the ward fields named by keys of m, and the owner
// fields (bound by some ward field) among them.
func wardFields(sch *schema.Schema, m map[string]any) (wards, owners []*schema.Field, keys map[*schema.Field]string) {
	keys = map[*schema.Field]string{}
	bound := map[string]bool{}
	for _, f := range sch.Fields {
		if isWard(f) {
			for _, n := range ormkit.List(ormkit.ParseTag(f.Tag.Get("ward"))["bind"]) {
				bound[n] = true
			}
		}
	}
	for k := range m {
		f := lookUpField(sch, k)
		if f == nil {
			continue
		}
		keys[f] = k
		if isWard(f) || isIndex(f) {
			wards = append(wards, f)
		}
		if bound[f.Name] || bound[f.DBName] {
			owners = append(owners, f)
		}
	}
	return wards, owners, keys
}

// lookUpField finds the field a map key names, as the database will read
// it: GORM passes a key it does not know through as a column name, so a
// quoted ("body", `body`, [body]) or table-qualified (notes.body) key
// writes the column all the same, and must be sealed all the same.
func lookUpField(sch *schema.Schema, k string) *schema.Field {
	if f := sch.LookUpField(k); f != nil {
		return f
	}
	name := k
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Trim(strings.TrimSpace(name), "\"`[]")
	if name == k {
		return nil
	}
	return sch.LookUpField(name)
}

func names(fs []*schema.Field) string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.DBName
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// refuseTable refuses map writes through Table("…") to a table with ward
// columns: without a model there is no row key to seal with.
func (s *Serializer) refuseTable(db *gorm.DB, m map[string]any) bool {
	v, ok := s.tables.Load(db.Statement.Table)
	if !ok {
		return false
	}
	var hit []string
	for k := range m {
		if slices.Contains(v.([]string), k) {
			hit = append(hit, k)
		}
	}
	if len(hit) == 0 {
		return false
	}
	slices.Sort(hit)
	db.AddError(fmt.Errorf("%w: Table(%q) sets ward columns %s without a model: use Model(&row) (one row) so that each value is sealed for its row", ErrUnsealable, db.Statement.Table, strings.Join(hit, ", ")))
	return true
}

// deferKey carries, in a create's context, the values whose row key the
// database assigns.
type deferKey struct{}

// deferred are values to seal once the database has assigned their rows'
// keys.
type deferred struct {
	mu   sync.Mutex
	vals []deferredValue
}

type deferredValue struct {
	f   *schema.Field
	dst reflect.Value
	pt  []byte
}

func (d *deferred) add(f *schema.Field, dst reflect.Value, pt []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.vals = append(d.vals, deferredValue{f, dst, pt})
}

// sealDeferred seals the values of rows whose key the database assigned
// on insert (RETURNING, last_insert_rowid), and writes them in the
// create's transaction.
func (s *Serializer) sealDeferred(db *gorm.DB) {
	d, ok := db.Statement.Context.Value(deferKey{}).(*deferred)
	if !ok || db.Error != nil || len(d.vals) == 0 {
		return
	}
	stmt := db.Statement
	for _, v := range d.vals {
		b, err := s.binding(v.f)
		if err != nil {
			db.AddError(err)
			return
		}
		rk, err := b.row(stmt.Context, v.f, v.dst)
		if err != nil {
			db.AddError(fmt.Errorf("%w (the database assigned no key?)", err))
			return
		}
		ct, err := b.col.Seal(rk, v.pt)
		clear(v.pt)
		if err != nil {
			db.AddError(err)
			return
		}
		val, _ := ct.Value()
		key, _ := b.key.ValueOf(stmt.Context, v.dst)
		q := fmt.Sprintf("UPDATE %s SET %s = ? WHERE %s = ?", stmt.Quote(v.f.Schema.Table), stmt.Quote(v.f.DBName), stmt.Quote(b.key.DBName))
		if err := db.Session(&gorm.Session{NewDB: true, SkipHooks: true}).Exec(q, val, key).Error; err != nil {
			db.AddError(fmt.Errorf("wardgorm: sealing %s.%s for its assigned key: %w", v.f.Schema.Table, v.f.DBName, err))
			return
		}
	}
}

// guardCreate seals ward values of Create(map), refuses upsert
// assignments to ward columns, and prepares values whose row key the
// database assigns.
func (s *Serializer) guardCreate(db *gorm.DB) {
	if db.Error != nil {
		return
	}
	s.attachTx(db)
	stmt := db.Statement
	if stmt.Schema != nil {
		for _, pf := range stmt.Schema.PrimaryFields {
			if pf.AutoIncrement {
				stmt.Context = context.WithValue(stmt.Context, deferKey{}, &deferred{})
				break
			}
		}
	}
	var maps []map[string]any
	switch d := stmt.Dest.(type) {
	case map[string]any:
		maps = []map[string]any{d}
	case *map[string]any:
		maps = []map[string]any{*d}
	case []map[string]any:
		maps = d
	case *[]map[string]any:
		maps = *d
	}
	if maps == nil {
		if err := s.prepareRows(db); err != nil {
			db.AddError(err)
			return
		}
	}
	if stmt.Schema == nil {
		for _, m := range maps {
			if s.refuseTable(db, m) {
				return
			}
		}
		return
	}
	s.noteSchema(stmt.Schema)
	if c, ok := stmt.Clauses["ON CONFLICT"]; ok {
		if oc, ok := c.Expression.(clause.OnConflict); ok {
			for _, a := range oc.DoUpdates {
				f := stmt.Schema.LookUpField(a.Column.Name)
				if f == nil || !(isWard(f) || isIndex(f)) {
					continue
				}
				if col, ok := a.Value.(clause.Column); ok && col.Table == "excluded" && col.Name == f.DBName {
					continue // the inserted row's own sealed value
				}
				db.AddError(fmt.Errorf("%w: the upsert assigns ward column %s.%s a value: use clause.AssignmentColumns, which takes the inserted row's sealed value", ErrUnsealable, stmt.Schema.Table, f.DBName))
				return
			}
		}
	}
	for _, m := range maps {
		wards, _, keys := wardFields(stmt.Schema, m)
		if len(wards) == 0 {
			continue
		}
		if _, err := s.sealMap(db.Statement.Context, stmt.Schema, m, keys, wards, reflect.Value{}); err != nil {
			db.AddError(err)
			return
		}
	}
}

// guardUpdate seals the ward values of a map update of one row, updates
// the blind indexes computed from them, re-seals values bound to a
// changed owner field, and refuses bulk updates of either.
func (s *Serializer) guardUpdate(db *gorm.DB) {
	if db.Error != nil {
		return
	}
	s.attachTx(db)
	stmt := db.Statement
	if d, m := reflect.ValueOf(stmt.Dest), reflect.ValueOf(stmt.Model); d.Kind() == reflect.Pointer && m.Kind() == reflect.Pointer && d.Pointer() == m.Pointer() {
		if err := s.prepareRows(db); err != nil { // Save(&row)
			db.AddError(err)
			return
		}
	}
	m, ok := stmt.Dest.(map[string]any)
	if !ok {
		if stmt.Schema != nil {
			m, ok = s.structToMap(db)
		}
		if !ok {
			return
		}
	}
	if stmt.Schema == nil {
		s.refuseTable(db, m)
		return
	}
	s.noteSchema(stmt.Schema)
	wards, owners, keys := wardFields(stmt.Schema, m)
	if len(wards) == 0 && len(owners) == 0 {
		return
	}
	for _, f := range wards {
		if expr, ok := m[keys[f]].(clause.Expression); ok {
			db.AddError(fmt.Errorf("%w: %s.%s is assigned an SQL expression (%T), which cannot be sealed", ErrUnsealable, stmt.Schema.Table, f.DBName, expr))
			return
		}
	}
	row := stmt.ReflectValue
	if !singleRow(stmt) {
		all := append(slices.Clone(wards), owners...)
		what := "ward columns " + names(all)
		if len(wards) == 0 {
			what = "owner columns " + names(owners) + ", which ward columns are bound to"
		}
		db.AddError(fmt.Errorf("%w: a bulk update of %s.%s (Model without a primary key, or a slice): each row's value is sealed for that row; load the rows and update each (Model(&row))", ErrUnsealable, stmt.Schema.Table, what))
		return
	}
	wards, err := s.rebindOwners(db, m, keys, wards)
	if err != nil {
		db.AddError(err)
		return
	}
	plain, err := s.sealMap(stmt.Context, stmt.Schema, m, keys, wards, row)
	if err != nil {
		db.AddError(err)
		return
	}
	stmt.Settings.Store(plainKey, plain)
	stmt.Dest = m
}

// singleRow reports whether the statement updates one row: a struct
// Model whose primary key is set.
func singleRow(stmt *gorm.Statement) bool {
	row := stmt.ReflectValue
	if row.Kind() != reflect.Struct || len(stmt.Schema.PrimaryFields) == 0 {
		return false
	}
	for _, pf := range stmt.Schema.PrimaryFields {
		if _, zero := pf.ValueOf(stmt.Context, row); zero {
			return false
		}
	}
	return true
}

// rebindOwners adds to the update m the ward fields bound to a changed
// owner that are not themselves in it, re-sealed from their stored value
// in this statement's transaction, and returns the ward fields to seal.
func (s *Serializer) rebindOwners(db *gorm.DB, m map[string]any, keys map[*schema.Field]string, wards []*schema.Field) ([]*schema.Field, error) {
	stmt := db.Statement
	for _, f := range stmt.Schema.Fields {
		if !isWard(f) || slices.Contains(wards, f) {
			continue
		}
		b, err := s.binding(f)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(b.bound, func(bf *schema.Field) bool { _, ok := keys[bf]; return ok }) {
			continue
		}
		pt, null, err := s.storedPlaintext(db, f, b, stmt.ReflectValue)
		if err != nil {
			return nil, fmt.Errorf("wardgorm: re-sealing %s.%s for its new owner: %w", stmt.Schema.Table, f.DBName, err)
		}
		if null {
			m[f.DBName] = nil
		} else {
			m[f.DBName] = pt
		}
		keys[f] = f.DBName
		wards = append(wards, f)
	}
	return wards, nil
}

// structToMap turns Updates(struct) of a model's type into the map GORM
// would update (its non-zero fields), so that it is sealed for the
// Model's row rather than the partial struct's.
func (s *Serializer) structToMap(db *gorm.DB) (map[string]any, bool) {
	stmt := db.Statement
	if stmt.Dest == stmt.Model {
		return nil, false
	}
	dv := reflect.ValueOf(stmt.Dest)
	for dv.Kind() == reflect.Pointer {
		dv = dv.Elem()
	}
	if dv.Kind() != reflect.Struct || dv.Type() != stmt.Schema.ModelType {
		return nil, false
	}
	m := map[string]any{}
	hasWard := false
	for _, f := range stmt.Schema.Fields {
		if f.DBName == "" || f.PrimaryKey {
			continue
		}
		fv := f.ReflectValueOf(stmt.Context, dv)
		if fv.IsZero() {
			continue
		}
		m[f.Name] = fv.Interface()
		hasWard = hasWard || isWard(f)
	}
	if !hasWard {
		return nil, false
	}
	// The index fields of the struct are computed, not copied.
	for _, f := range stmt.Schema.Fields {
		if isIndex(f) {
			delete(m, f.Name)
		}
	}
	return m, true
}

// plainKey stores, in the statement, the plaintexts that the model's
// fields get back after the update (GORM copies the map's values, now
// sealed, into the model).
const plainKey = "ward:plaintexts"

// sealMap seals the ward fields of m for the row (model row, or the map's
// own key and bound values), and computes the blind indexes of the sealed
// fields.
func (s *Serializer) sealMap(ctx context.Context, sch *schema.Schema, m map[string]any, keys map[*schema.Field]string, wards []*schema.Field, row reflect.Value) (map[*schema.Field]any, error) {
	plain := map[*schema.Field]any{}
	for _, f := range wards {
		if isIndex(f) {
			delete(m, keys[f]) // recomputed below from its source
			continue
		}
		b, err := s.binding(f)
		if err != nil {
			return nil, err
		}
		v := m[keys[f]]
		pt, null, err := plaintext(v)
		if err != nil {
			return nil, fmt.Errorf("wardgorm: %s.%s: %w", sch.Table, f.DBName, err)
		}
		plain[f] = v
		if null {
			m[keys[f]] = nil
		} else {
			rk, err := b.rowWith(ctx, f, row, m)
			if err != nil {
				return nil, err
			}
			ct, err := b.col.Seal(rk, pt)
			if err != nil {
				return nil, err
			}
			if m[keys[f]], err = ct.Value(); err != nil {
				return nil, err
			}
		}
		for _, xf := range sch.Fields {
			if isIndex(xf) && sch.LookUpField(ormkit.ParseTag(xf.Tag.Get("ward"))["of"]) == f {
				if null {
					m[xf.DBName] = nil
					continue
				}
				idx, err := s.indexValue(ctx, xf, f, string(pt), true)
				if err != nil {
					return nil, err
				}
				m[xf.DBName] = idx
			}
		}
	}
	return plain, nil
}

// storedPlaintext reads and opens f's stored value for the model's row,
// in the statement's connection (its transaction).
func (s *Serializer) storedPlaintext(db *gorm.DB, f *schema.Field, b *binding, row reflect.Value) ([]byte, bool, error) {
	stmt := db.Statement
	sch := stmt.Schema
	cols := []string{f.DBName}
	for _, bf := range b.bound {
		cols = append(cols, bf.DBName)
	}
	var where []string
	var args []any
	for _, pf := range sch.PrimaryFields {
		v, _ := pf.ValueOf(stmt.Context, row)
		where = append(where, stmt.Quote(pf.DBName)+" = ?")
		args = append(args, v)
	}
	quoted := make([]string, len(cols))
	for i, c := range cols {
		quoted[i] = stmt.Quote(c)
	}
	var out []any
	for range cols {
		out = append(out, new(any))
	}
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(quoted, ", "), stmt.Quote(sch.Table), strings.Join(where, " AND "))
	if err := db.Session(&gorm.Session{NewDB: true}).Raw(q, args...).Row().Scan(out...); err != nil {
		return nil, false, err
	}
	raw := *(out[0].(*any))
	if raw == nil {
		return nil, true, nil
	}
	var ct field.Ciphertext
	if err := ct.Scan(raw); err != nil {
		return nil, false, err
	}
	// The stored bound values, not the model's (the statement changes
	// them): the value was sealed for those.
	stored := map[string]any{}
	for i, bf := range b.bound {
		stored[bf.DBName] = *(out[i+1].(*any))
	}
	rk, err := b.rowWith(stmt.Context, f, row, stored)
	if err != nil {
		return nil, false, err
	}
	pt, err := b.col.Open(rk, ct)
	return pt, false, err
}

// restorePlaintext gives the model's fields back the plaintexts the update
// set (GORM copied the sealed map values into them).
func restorePlaintext(db *gorm.DB) {
	stmt := db.Statement
	m, ok := stmt.Dest.(map[string]any)
	if !ok || stmt.Schema == nil || stmt.ReflectValue.Kind() != reflect.Struct || !stmt.ReflectValue.CanAddr() {
		return
	}
	v, ok := stmt.Settings.Load(plainKey)
	if !ok {
		return
	}
	for f, pv := range v.(map[*schema.Field]any) {
		if _, in := m[f.DBName]; !in {
			if _, in := m[f.Name]; !in {
				continue
			}
		}
		out := reflect.New(f.FieldType).Elem()
		if pv != nil {
			pt, null, err := plaintext(pv)
			if err != nil || null {
				continue
			}
			if setPlaintext(out, pt) != nil {
				continue
			}
		}
		f.ReflectValueOf(stmt.Context, stmt.ReflectValue).Set(out)
	}
}

// Eq narrows db to the rows of model whose ward field (by Go name) equals
// value, through the field's blind index (the ward-index field whose of:
// names it), as a query on the ward field would read:
//
//	var u User
//	err := wardgorm.Eq(db, &User{}, "Email", "Alice@example.com").First(&u).Error
//
// Put the UNIQUE constraint on the index column to keep the field unique.
func (s *Serializer) Eq(db *gorm.DB, model any, fieldName string, value string) *gorm.DB {
	stmt := &gorm.Statement{DB: db}
	if err := stmt.Parse(model); err != nil {
		db = db.Session(&gorm.Session{})
		db.AddError(fmt.Errorf("wardgorm: parsing %T: %w", model, err))
		return db
	}
	src := stmt.Schema.LookUpField(fieldName)
	if src != nil {
		if idx, spare := s.pair(src); idx != nil && spare != nil {
			return s.eqRecorded(db, model, src, idx, spare, value)
		}
	}
	for _, f := range stmt.Schema.Fields {
		if src != nil && isIndex(f) && stmt.Schema.LookUpField(ormkit.ParseTag(f.Tag.Get("ward"))["of"]) == src {
			idx, err := s.Index(stmt.Schema.Table, src.DBName, value)
			if err != nil {
				db = db.Session(&gorm.Session{})
				db.AddError(err)
				return db
			}
			return db.Model(model).Where(clause.Eq{Column: clause.Column{Table: stmt.Schema.Table, Name: f.DBName}, Value: idx})
		}
	}
	db = db.Session(&gorm.Session{})
	db.AddError(fmt.Errorf("wardgorm: %T has no blind index of %s (a ward-index field with of:%s)", model, fieldName, fieldName))
	return db
}
