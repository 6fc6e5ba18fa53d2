package reseal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/sqltable"
)

// queries are the statements of a job over one table (or shard of it).
type queries struct {
	count, first, next string
	// cas builds the statement that updates n rows at once, each only if
	// it still holds the value read (see casSQL).
	cas func(n int) string
	// countArgs and rangeArgs bound an integer key range (shards).
	countArgs, rangeArgs []any
	// index says cas also sets the blind-index column.
	index bool
	// unnest, on PostgreSQL, builds the statement that updates a chunk
	// from one array per column (see unnestSQL).
	unnest string
	// bucket, when set, keeps only rows of this job's hash bucket (shards
	// of a table with text keys).
	bucket func(key any) bool
	// subjectArg, when set, is appended to every read's arguments
	// (Job.Subject), or with subjectBeforeLimit put before the limit.
	subjectArg         any
	subjectBeforeLimit bool
	// width is the most the column holds, as declared (characters for
	// a text column, bytes for a binary one); 0 when unbounded.
	width int64
}

func (r *Job) columns() (table, col, key, cols string, err error) {
	if table, err = r.Dialect.Quote(r.Column.Table()); err != nil {
		return
	}
	if col, err = r.Dialect.Quote(r.Column.Name()); err != nil {
		return
	}
	if key, err = r.Dialect.Quote(r.Key); err != nil {
		return
	}
	cols = key + ", " + col
	for _, b := range r.Column.Bound() {
		qb, err := r.Dialect.Quote(b)
		if err != nil {
			return "", "", "", "", err
		}
		cols += ", " + qb
	}
	if r.Index != nil {
		qi, err := r.Dialect.Quote(r.IndexColumn)
		if err != nil {
			return "", "", "", "", err
		}
		cols += ", " + qi
	}
	return
}

func (r *Job) queries(ctx context.Context) (queries, error) {
	if r.DB == nil || r.Column == nil {
		return queries{}, errors.New("reseal: Job needs DB and field.Column")
	}
	if r.Dialect != field.SQLite && r.Dialect != field.Postgres && r.Dialect != field.MySQL {
		return queries{}, errors.New("reseal: Job needs a field.Dialect")
	}
	if r.Shards > 1 && (r.Shard < 0 || r.Shard >= r.Shards) {
		return queries{}, fmt.Errorf("reseal: shard %d of %d", r.Shard, r.Shards)
	}
	t, c, k, cols, err := r.columns()
	if err != nil {
		return queries{}, err
	}
	p := r.Dialect.Placeholder
	q := queries{
		count: fmt.Sprintf("SELECT COUNT(*) FROM %s", t),
		first: fmt.Sprintf("SELECT %s FROM %s ORDER BY %s LIMIT %s", cols, t, k, p(1)),
		next:  fmt.Sprintf("SELECT %s FROM %s WHERE %s > %s ORDER BY %s LIMIT %s", cols, t, k, p(1), k, p(2)),
	}
	if err := r.checkColumns(ctx, t, cols); err != nil {
		return queries{}, err
	}
	if q.width, err = sqltable.ColumnWidth(ctx, r.DB, r.Dialect.String(), r.Column.Table(), r.Column.Name()); err != nil {
		return queries{}, fmt.Errorf("reseal: %w", err)
	}
	keyType, colType, err := r.pgTypes(ctx)
	if err != nil {
		return queries{}, err
	}
	var ix casIndex
	if r.Index != nil {
		ix.col, _ = r.Dialect.Quote(r.IndexColumn)
		if ix.typ, err = r.pgType(ctx, r.IndexColumn); err != nil {
			return queries{}, err
		}
	}
	q.cas = func(n int) string { return casSQL(r.Dialect, t, c, k, keyType, colType, ix, n) }
	if r.Dialect == field.Postgres {
		q.unnest = unnestSQL(t, c, k, keyType, colType, ix)
	}
	q.index = r.Index != nil
	if r.Subject != "" {
		return r.onlySubject(q, t, k, cols)
	}
	if r.Shards <= 1 {
		return q, nil
	}
	return r.shard(ctx, q, t, k, cols)
}

// onlySubject restricts the queries to Job.Subject's rows: the subject's
// value is the last argument of each (after the key and the limit).
func (r *Job) onlySubject(q queries, t, k, cols string) (queries, error) {
	if r.Shards > 1 {
		return q, errors.New("reseal: a job of one Subject takes no shards")
	}
	sc, err := r.Dialect.Quote(r.Column.SubjectColumn())
	if err != nil || r.Column.SubjectColumn() == "" {
		return q, errors.New("reseal: Job.Subject needs a column sealed per subject (field.PerSubject)")
	}
	// Numbered (SQLite's ?NNN): the subject comes after the key and the
	// limit, whatever order the SQL names them in. MySQL numbers nothing:
	// there readBatch passes the subject before the limit, in SQL order.
	p := func(n int) string {
		switch r.Dialect {
		case field.Postgres:
			return fmt.Sprintf("$%d", n)
		case field.MySQL:
			return "?"
		}
		return fmt.Sprintf("?%d", n)
	}
	text := "TEXT"
	if r.Dialect == field.MySQL {
		// Compared as bytes: under a case-insensitive collation "Alice"
		// would select alice's rows too.
		text, q.subjectBeforeLimit = "BINARY", true
	}
	subj := func(n int) string { return fmt.Sprintf("CAST(%s AS %s)", p(n), text) }
	q.count = fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE CAST(%s AS %s) = %s", t, sc, text, subj(1))
	q.first = fmt.Sprintf("SELECT %s FROM %s WHERE CAST(%s AS %s) = %s ORDER BY %s LIMIT %s", cols, t, sc, text, subj(2), k, p(1))
	q.next = fmt.Sprintf("SELECT %s FROM %s WHERE %s > %s AND CAST(%s AS %s) = %s ORDER BY %s LIMIT %s", cols, t, k, p(1), sc, text, subj(3), k, p(2))
	q.countArgs, q.subjectArg = []any{r.Subject}, r.Subject
	return q, nil
}

// checkColumns names the table and every column the job uses before any
// work, so that a typo is reported with the names instead of as a SQL
// error mid-job, or, in SQLite, which reads an unknown double-quoted name
// as a string literal, as a column of plaintext.
func (r *Job) checkColumns(ctx context.Context, t, cols string) error {
	names := append([]string{r.Key, r.Column.Name()}, r.Column.Bound()...)
	if r.Index != nil {
		names = append(names, r.IndexColumn)
	}
	fail := func(err error) error {
		return fmt.Errorf("reseal: table %s with columns %s: %w (check --table, --column, --key and --bind)",
			r.Column.Table(), strings.Join(names, ", "), err)
	}
	if r.Dialect == field.SQLite {
		have := map[string]bool{}
		schema, table, qualified := strings.Cut(r.Column.Table(), ".")
		if !qualified {
			schema, table = "main", r.Column.Table()
		}
		rows, err := r.DB.QueryContext(ctx, "SELECT name FROM pragma_table_info(?, ?)", table, schema)
		if err != nil {
			return fail(err)
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return fail(err)
			}
			have[strings.ToLower(n)] = true
		}
		if err := rows.Err(); err != nil {
			return fail(err)
		}
		for _, n := range names {
			if !have[strings.ToLower(n)] {
				return fail(fmt.Errorf("no column %q", n))
			}
		}
		return nil
	}
	rows, err := r.DB.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE 1 = 0", cols, t))
	if err != nil {
		return fail(err)
	}
	return rows.Close()
}

// casRows is the number of rows one compare-and-swap statement updates.
const casRows = 256

// update is one compare-and-swap: the row's key, the value read, the new
// value.
type update struct {
	key, old, new any
	idx           []byte // the blind index, with Job.Index
	plain         bool   // the old value was plaintext (FromPlaintext)
}

// casUpdate returns the statement that updates the first rows of ups,
// its arguments, in the order casSQL numbers them, and how many rows it
// updates: up to unnestRows through q.unnest where the rows' keys and
// values allow it, else up to casRows through a VALUES list.
func (q queries) casUpdate(ups []update) (string, []any, int) {
	if chunk := ups[:min(len(ups), unnestRows)]; q.unnest != "" {
		if args, ok := q.arrays(chunk); ok {
			return q.unnest, args, len(chunk)
		}
	}
	chunk := ups[:min(len(ups), casRows)]
	args := make([]any, 0, 4*len(chunk))
	for _, u := range chunk {
		args = append(args, u.key, u.old, u.new)
		if q.index {
			args = append(args, u.idx)
		}
	}
	return q.cas(len(chunk)), args, len(chunk)
}

// unnestRows is the most rows one q.unnest statement updates: its
// parameters are four arrays whatever their length, and a batch of the
// default 500 rows goes in one statement.
const unnestRows = 4096

// unnestSQL is casSQL for PostgreSQL with the chunk's rows passed as one
// array per column instead of a VALUES list of parameters: one statement
// whatever the chunk's size (prepared once), three or four parameters
// instead of three or four per row, which the driver encodes each into a
// buffer it grows and drops per statement (docs/OPERATIONS.md, "Jobs and
// memory").
func unnestSQL(t, c, k, keyType, colType string, ix casIndex) string {
	var b strings.Builder
	if ix.col != "" {
		fmt.Fprintf(&b, "UPDATE %s SET %s = v.ward_new, %s = v.ward_idx", t, c, ix.col)
		fmt.Fprintf(&b, " FROM unnest($1::%s[], $2::%s[], $3::%s[], $4::%s[]) AS v(ward_key, ward_old, ward_new, ward_idx)", keyType, colType, colType, ix.typ)
	} else {
		fmt.Fprintf(&b, "UPDATE %s SET %s = v.ward_new", t, c)
		fmt.Fprintf(&b, " FROM unnest($1::%s[], $2::%s[], $3::%s[]) AS v(ward_key, ward_old, ward_new)", keyType, colType, colType)
	}
	fmt.Fprintf(&b, " WHERE %s.%s = v.ward_key AND %s.%s = v.ward_old", t, k, t, c)
	return b.String()
}

// arrays returns the chunk's keys, values read, new values (and indexes)
// as one typed slice each, for q.unnest; ok is false when there is no
// such statement or the chunk's keys or values are not all of one type
// the driver encodes as an array (int64, string or bytes).
func (q queries) arrays(chunk []update) (args []any, ok bool) {
	if q.unnest == "" || len(chunk) == 0 {
		return nil, false
	}
	keys, ok := column(chunk, func(u update) any { return u.key })
	if !ok {
		return nil, false
	}
	olds, ok1 := column(chunk, func(u update) any { return u.old })
	news, ok2 := column(chunk, func(u update) any { return u.new })
	if !ok1 || !ok2 {
		return nil, false
	}
	args = []any{keys, olds, news}
	if q.index {
		idx := make([][]byte, len(chunk))
		for i, u := range chunk {
			idx[i] = u.idx
		}
		args = append(args, idx)
	}
	return args, true
}

// column gathers one field of every update into a typed slice, or says
// it cannot: a field of mixed or other types.
func column(chunk []update, get func(update) any) (any, bool) {
	switch get(chunk[0]).(type) {
	case int64:
		return typed[int64](chunk, get)
	case string:
		return typed[string](chunk, get)
	case []byte:
		return typed[[]byte](chunk, get)
	}
	return nil, false
}

func typed[T any](chunk []update, get func(update) any) (any, bool) {
	out := make([]T, len(chunk))
	for i, u := range chunk {
		v, ok := get(u).(T)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// casSQL is one UPDATE of n rows from a VALUES list of (key, value
// read, new value): a row changes only if it still holds the value read,
// and the statement's row count says how many did. One statement per
// chunk instead of one per row spares a round trip to the database per
// row. PostgreSQL needs the VALUES typed (keyType, colType); SQLite names
// VALUES columns column1, column2, column3.
func casSQL(d field.Dialect, t, c, k, keyType, colType string, ix casIndex, n int) string {
	if d == field.MySQL {
		return mysqlCAS(t, c, k, ix, n)
	}
	var b strings.Builder
	w := 3
	if ix.col != "" {
		w = 4
		fmt.Fprintf(&b, "UPDATE %s SET %s = v.ward_new, %s = v.ward_idx FROM (", t, c, ix.col)
	} else {
		fmt.Fprintf(&b, "UPDATE %s SET %s = v.ward_new FROM (", t, c)
	}
	if d == field.SQLite {
		b.WriteString("SELECT column1 AS ward_key, column2 AS ward_old, column3 AS ward_new")
		if w == 4 {
			b.WriteString(", column4 AS ward_idx")
		}
		b.WriteString(" FROM (")
	}
	b.WriteString("VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case d == field.Postgres && w == 4:
			fmt.Fprintf(&b, "($%d::%s, $%d::%s, $%d::%s, $%d::%s)", w*i+1, keyType, w*i+2, colType, w*i+3, colType, w*i+4, ix.typ)
		case d == field.Postgres:
			fmt.Fprintf(&b, "($%d::%s, $%d::%s, $%d::%s)", w*i+1, keyType, w*i+2, colType, w*i+3, colType)
		case w == 4:
			b.WriteString("(?, ?, ?, ?)")
		default:
			b.WriteString("(?, ?, ?)")
		}
	}
	switch {
	case d == field.SQLite:
		b.WriteString(")) AS v")
	case w == 4:
		b.WriteString(") AS v(ward_key, ward_old, ward_new, ward_idx)")
	default:
		b.WriteString(") AS v(ward_key, ward_old, ward_new)")
	}
	fmt.Fprintf(&b, " WHERE %s.%s = v.ward_key AND %s.%s = v.ward_old", t, k, t, c)
	return b.String()
}

// mysqlCAS is casSQL for MySQL, which has no UPDATE … FROM: a join with
// the rows as a derived table (SELECT … UNION ALL SELECT …, which MySQL 8
// and MariaDB both read), whose values are cast to bytes (a parameter of
// ciphertext bytes would otherwise be read in the connection's character
// set, and refused). The value read is compared as bytes (BINARY):
// under a case-insensitive collation "Hello" = "hello", and a row a writer
// changed that way in between would be overwritten.
func mysqlCAS(t, c, k string, ix casIndex, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "UPDATE %s JOIN (", t)
	for i := range n {
		switch {
		case i > 0 && ix.col != "":
			b.WriteString(" UNION ALL SELECT ?, CAST(? AS BINARY), CAST(? AS BINARY), CAST(? AS BINARY)")
		case i > 0:
			b.WriteString(" UNION ALL SELECT ?, CAST(? AS BINARY), CAST(? AS BINARY)")
		case ix.col != "":
			b.WriteString("SELECT ? AS ward_key, CAST(? AS BINARY) AS ward_old, CAST(? AS BINARY) AS ward_new, CAST(? AS BINARY) AS ward_idx")
		default:
			b.WriteString("SELECT ? AS ward_key, CAST(? AS BINARY) AS ward_old, CAST(? AS BINARY) AS ward_new")
		}
	}
	fmt.Fprintf(&b, ") AS v ON %s.%s = v.ward_key AND %s.%s = BINARY v.ward_old SET %s.%s = v.ward_new", t, k, t, c, t, c)
	if ix.col != "" {
		fmt.Fprintf(&b, ", %s.%s = v.ward_idx", t, ix.col)
	}
	return b.String()
}

// casIndex is the blind-index column a CAS update also sets (col
// quoted, typ its PostgreSQL type), or none.
type casIndex struct{ col, typ string }

// pgType returns the SQL type of a column of the job's table (PostgreSQL).
func (r *Job) pgType(ctx context.Context, column string) (string, error) {
	if r.Dialect != field.Postgres {
		return "", nil
	}
	t, _ := r.Dialect.Quote(r.Column.Table())
	var typ string
	q := "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2"
	if err := r.DB.QueryRowContext(ctx, q, t, column).Scan(&typ); err != nil {
		return "", fmt.Errorf("reseal: type of %s.%s: %w", r.Column.Table(), column, err)
	}
	return typ, nil
}

// pgTypes returns the SQL types of the key and the column (PostgreSQL).
func (r *Job) pgTypes(ctx context.Context) (keyType, colType string, err error) {
	if r.Dialect != field.Postgres {
		return "", "", nil
	}
	t, _ := r.Dialect.Quote(r.Column.Table())
	q := "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2"
	for _, a := range []struct {
		name string
		out  *string
	}{{r.Key, &keyType}, {r.Column.Name(), &colType}} {
		if err := r.DB.QueryRowContext(ctx, q, t, a.name).Scan(a.out); err != nil {
			return "", "", fmt.Errorf("reseal: type of %s.%s: %w", r.Column.Table(), a.name, err)
		}
	}
	return keyType, colType, nil
}

// shard restricts the queries to this job's share: an even split of the
// key range for integer keys, an FNV-1a hash bucket for text keys (read in
// full, filtered here).
func (r *Job) shard(ctx context.Context, q queries, t, k, cols string) (queries, error) {
	var lo, hi any
	if err := r.DB.QueryRowContext(ctx, fmt.Sprintf("SELECT MIN(%s), MAX(%s) FROM %s", k, k, t)).Scan(&lo, &hi); err != nil {
		return q, fmt.Errorf("reseal: key range of %s: %w", r.Column.Table(), err)
	}
	min, ok1 := lo.(int64)
	max, ok2 := hi.(int64)
	if lo == nil || !ok1 || !ok2 {
		n, i := uint32(r.Shards), uint32(r.Shard)
		q.bucket = func(key any) bool {
			h := fnv.New32a()
			fmt.Fprint(h, key)
			return h.Sum32()%n == i
		}
		return q, nil
	}
	span := (max - min + 1) / int64(r.Shards)
	from := min + int64(r.Shard)*span
	to := from + span // exclusive
	if r.Shard == r.Shards-1 {
		to = max + 1
	}
	p := r.Dialect.Placeholder
	q.count = fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s >= %s AND %s < %s", t, k, p(1), k, p(2))
	q.countArgs = []any{from, to}
	q.first = fmt.Sprintf("SELECT %s FROM %s WHERE %s >= %s AND %s < %s ORDER BY %s LIMIT %s", cols, t, k, p(1), k, p(2), k, p(3))
	q.next = fmt.Sprintf("SELECT %s FROM %s WHERE %s > %s AND %s < %s ORDER BY %s LIMIT %s", cols, t, k, p(1), k, p(2), k, p(3))
	q.rangeArgs = []any{from, to}
	return q, nil
}

// dbRow is one row as read: primary key, value and bound values.
type dbRow struct {
	key   any
	val   any // as scanned: nil, []byte or string
	bound []any
	idx   any // the blind index, with Job.Index
}

// rowKey returns the row's key with its bound values.
func (d dbRow) rowKey() (field.RowKey, error) {
	rk, err := field.RowOf(d.key)
	if err != nil {
		return rk, err
	}
	if len(d.bound) > 0 {
		rk = rk.With(d.bound...)
	}
	return rk, rk.Err()
}

func (r *Job) batchSize() int {
	if r.BatchSize <= 0 {
		return 500
	}
	return r.BatchSize
}

// readBatch reads up to the batch size of rows after last (nil: from the
// start) in key order.
func (r *Job) readBatch(ctx context.Context, q queries, last any) ([]dbRow, error) {
	var args []any
	switch {
	case last == nil && q.rangeArgs != nil:
		args = []any{q.rangeArgs[0], q.rangeArgs[1], r.batchSize()}
	case last == nil:
		args = []any{r.batchSize()}
	case q.rangeArgs != nil:
		args = []any{last, q.rangeArgs[1], r.batchSize()}
	default:
		args = []any{last, r.batchSize()}
	}
	query := q.next
	if last == nil {
		query = q.first
	}
	if q.subjectArg != nil && q.subjectBeforeLimit {
		args = append(args[:len(args)-1], q.subjectArg, args[len(args)-1])
	} else if q.subjectArg != nil {
		args = append(args, q.subjectArg)
	}
	rows, err := r.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reseal: reading %s: %w", r.Column.Table(), err)
	}
	defer rows.Close()
	var got []dbRow
	nb := len(r.Column.Bound())
	for rows.Next() {
		d := dbRow{bound: make([]any, nb)}
		dest := []any{&d.key, &d.val}
		for i := range d.bound {
			dest = append(dest, &d.bound[i])
		}
		if r.Index != nil {
			dest = append(dest, &d.idx)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("reseal: reading %s: %w", r.Column.Table(), err)
		}
		if b, ok := d.key.([]byte); ok {
			d.key = string(b)
		}
		if b, ok := d.val.([]byte); ok {
			d.val = bytes.Clone(b) // an empty value stays empty, not NULL (MySQL hands TEXT over as bytes)
		}
		got = append(got, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reseal: reading %s: %w", r.Column.Table(), err)
	}
	return got, nil
}

// scan calls fn for every batch of rows in key order (of this shard).
func (r *Job) scan(ctx context.Context, q queries, fn func([]dbRow) error) error {
	var last any
	for {
		got, err := r.readBatch(ctx, q, last)
		if err != nil || len(got) == 0 {
			return err
		}
		full := len(got) == r.batchSize()
		last = got[len(got)-1].key
		if q.bucket != nil {
			mine := got[:0]
			for _, d := range got {
				if q.bucket(d.key) {
					mine = append(mine, d)
				}
			}
			got = mine
		}
		if len(got) > 0 {
			if err := fn(got); err != nil {
				return err
			}
		}
		if !full {
			return nil
		}
		if r.Pause > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(r.Pause):
			}
		}
	}
}
