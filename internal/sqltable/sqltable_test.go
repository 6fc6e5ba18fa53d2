package sqltable

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/internal/mytest"
)

const ddl = `CREATE TABLE IF NOT EXISTS "t" (id INTEGER PRIMARY KEY)`

// Several goroutines create the same table on fresh databases (SQLite: a
// file not yet in WAL mode, where a creator can get SQLITE_BUSY without
// waiting; PostgreSQL: concurrent CREATE TABLE IF NOT EXISTS): every one
// succeeds.
func TestConcurrentCreate(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	for i := range rounds {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
				table := d.Table(t, "created")
				var wg sync.WaitGroup
				errs := make(chan error, 8)
				for range 8 {
					wg.Go(func() {
						errs <- Create(context.Background(), d.DB, table, strings.Replace(ddl, `"t"`, table, 1))
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatal(err)
					}
				}
				if _, err := d.DB.Exec("INSERT INTO " + table + " (id) VALUES (1)"); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// openNoWait opens a SQLite file whose connections give up on a lock at
// once.
func openNoWait(t *testing.T, path string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A table that cannot be created while another connection holds the
// database's exclusive lock is created once the lock is released: the
// first try fails and a later one succeeds.
func TestCreateRetries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	holder := openNoWait(t, path)
	conn, err := holder.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	db := openNoWait(t, path)
	if _, err := db.Exec(ddl); err == nil {
		t.Fatal("CREATE TABLE succeeded under another connection's exclusive lock: the test proves nothing")
	}
	// The lock is released when Create first waits to retry, that is after
	// a failed try.
	retries := 0
	testHookRetry = func() {
		if retries++; retries == 1 {
			if _, err := conn.ExecContext(context.Background(), "COMMIT"); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookRetry = nil }()
	if err := Create(context.Background(), db, `"t"`, ddl); err != nil {
		t.Fatalf("Create after the lock was released: %v", err)
	}
	if retries != 1 {
		t.Fatalf("%d retries, want 1", retries)
	}
	if _, err := db.Exec(`INSERT INTO "t" (id) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
}

// A DDL that fails is accepted when the table exists, and reported with
// its own error, after Attempts tries, when it does not.
func TestCreateFailure(t *testing.T) {
	db := openNoWait(t, filepath.Join(t.TempDir(), "t.db"))
	if _, err := db.Exec(`CREATE TABLE "t" (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if err := Create(context.Background(), db, `"t"`, "CREATE TABLE broken syntax"); err != nil {
		t.Fatalf("failed DDL for a table that exists: %v", err)
	}
	start := time.Now()
	err := Create(context.Background(), db, `"missing"`, "CREATE TABLE broken syntax")
	if err == nil || !strings.Contains(err.Error(), "syntax") || !strings.Contains(err.Error(), fmt.Sprintf("%d attempts", Attempts)) {
		t.Fatalf("failed DDL for a missing table: %v", err)
	}
	if d := time.Since(start); d < FirstWait*(1<<(Attempts-1)-1) {
		t.Fatalf("gave up after %v, before its %d waits", d, Attempts-1)
	}
}

// Create stops waiting when its context ends.
func TestCreateContext(t *testing.T) {
	db := openNoWait(t, filepath.Join(t.TempDir(), "t.db"))
	ctx, cancel := context.WithTimeout(context.Background(), FirstWait/2)
	defer cancel()
	err := Create(ctx, db, `"missing"`, "CREATE TABLE broken syntax")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Create with an ending context: %v", err)
	}
}

// TestBound: values up to the bound come back whole, longer ones empty
// with TooLong set; the bound counts bytes, not characters.
func TestBound(t *testing.T) {
	const max = 64
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		// insert adds a row with the driver's placeholders.
		insert := func(table, cols string, args ...any) {
			t.Helper()
			ph := make([]string, len(args))
			for i := range ph {
				ph[i] = "?"
				if d.Driver == "pgx" {
					ph[i] = fmt.Sprintf("$%d", i+1)
				}
			}
			if _, err := d.DB.Exec("INSERT INTO "+table+" ("+cols+") VALUES ("+strings.Join(ph, ", ")+")", args...); err != nil {
				t.Fatal(err)
			}
		}
		table := d.Table(t, "bounded")
		text := "TEXT"
		if d.Name == "mysql" {
			text = "LONGTEXT" // TEXT holds 64 KiB there
		}
		if _, err := d.DB.Exec("CREATE TABLE " + table + " (id INTEGER PRIMARY KEY, a " + text + " NOT NULL, b " + text + " NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		rows := []struct{ a, b string }{
			{"", "short"},
			{strings.Repeat("x", max), "at the bound"},
			{strings.Repeat("x", max+1), "one past"},
			{strings.Repeat("é", max/2), "at the bound in two-byte characters"},
			{strings.Repeat("é", max/2+1), "past it in bytes, not in characters"},
			{"fine", strings.Repeat("y", 4<<20)},
		}
		for i, r := range rows {
			insert(table, "id, a, b", i, r.a, r.b)
		}
		a, b := Bound{"a", max}, Bound{"b", max}
		q := fmt.Sprintf("SELECT %s, %s, %s FROM %s ORDER BY id", a.Value(), b.Value(), TooLong(a, b), table)
		res, err := d.DB.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		for i := 0; res.Next(); i++ {
			var ga, gb string
			var long bool
			if err := res.Scan(&ga, &gb, &long); err != nil {
				t.Fatal(err)
			}
			wantLong := len(rows[i].a) > max || len(rows[i].b) > max
			wantA, wantB := rows[i].a, rows[i].b
			if len(wantA) > max {
				wantA = ""
			}
			if len(wantB) > max {
				wantB = ""
			}
			if ga != wantA || gb != wantB || long != wantLong {
				t.Errorf("row %d: %d and %d bytes, too long %v", i, len(ga), len(gb), long)
			}
		}
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		// A BLOB (BYTEA) column: the same bound in bytes.
		blobs := d.Table(t, "bounded_blob")
		if _, err := d.DB.Exec("CREATE TABLE " + blobs + " (id INTEGER PRIMARY KEY, w " + d.Blob + " NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		vals := [][]byte{bytes.Repeat([]byte{0xff}, max), bytes.Repeat([]byte{0}, max+1), bytes.Repeat([]byte{1}, 4<<20)}
		for i, v := range vals {
			insert(blobs, "id, w", i, v)
		}
		w := Bound{"w", max}
		res, err = d.DB.Query(fmt.Sprintf("SELECT %s, %s FROM %s ORDER BY id", w.Value(), TooLong(w), blobs))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		for i := 0; res.Next(); i++ {
			var got []byte
			var long bool
			if err := res.Scan(&got, &long); err != nil {
				t.Fatal(err)
			}
			want := vals[i]
			if len(want) > max {
				want = nil
			}
			if !bytes.Equal(got, want) || long != (len(vals[i]) > max) {
				t.Errorf("blob %d: %d bytes back, too long %v", i, len(got), long)
			}
		}
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMissing: a read of a table nobody created is told apart from other
// errors, on SQLite and PostgreSQL.
func TestMissing(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		_, err := d.DB.Exec(`SELECT 1 FROM ` + d.Table(t, "never_created") + ` WHERE 1 = 0`)
		if !Missing(err) {
			t.Fatalf("a missing table: %v", err)
		}
		_, err = d.DB.Exec(`SELEKT 1`)
		if err == nil || Missing(err) || Missing(nil) {
			t.Fatalf("a syntax error counted as a missing table: %v", err)
		}
	})
}

// TestUniqueIndexes: a UNIQUE column, a unique index over two columns and
// the primary key are listed with their columns; a plain index is not.
func TestUniqueIndexes(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		table := d.Table(t, "users")
		for _, q := range []string{
			fmt.Sprintf(`CREATE TABLE %s (id INTEGER PRIMARY KEY, email VARCHAR(100) UNIQUE, a VARCHAR(100), b VARCHAR(100), c VARCHAR(100))`, table),
			fmt.Sprintf(`CREATE UNIQUE INDEX %s_ab ON %s (a, b)`, table, table),
			fmt.Sprintf(`CREATE INDEX %s_c ON %s (c)`, table, table),
		} {
			if _, err := d.DB.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		got, err := UniqueIndexes(context.Background(), d.DB, d.Name, table)
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for _, u := range got {
			cols = append(cols, strings.Join(u.Columns, "+"))
		}
		want := map[string]bool{"email": true, "a+b": true}
		n := 0
		for _, c := range cols {
			if c == "c" {
				t.Fatalf("a plain index listed: %v", cols)
			}
			if want[c] {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("unique indexes of %s: %v", table, cols)
		}
	})
}

// TestDuplicate: a second insert of a key is a duplicate on every engine,
// other errors are not.
func TestDuplicate(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, d dbtest.DB) {
		table := d.Table(t, "dup")
		if _, err := d.DB.Exec("CREATE TABLE " + table + " (id INTEGER PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		ins := "INSERT INTO " + table + " (id) VALUES (1)"
		if _, err := d.DB.Exec(ins); err != nil || Duplicate(err) {
			t.Fatal(err)
		}
		if _, err := d.DB.Exec(ins); !Duplicate(err) || Conflict(err) {
			t.Fatalf("a second insert: %v", err)
		}
		if _, err := d.DB.Exec("SELEKT 1"); Duplicate(err) || Conflict(err) || Missing(err) {
			t.Fatalf("a syntax error: %v", err)
		}
	})
}

// TestConflictMySQL: two transactions that lock two rows in opposite
// orders deadlock; the one MariaDB rolls back gets error 1213, which
// Conflict recognises (a Galera cluster's certification failure has the
// same number).
func TestConflictMySQL(t *testing.T) {
	url := mytest.URL(t)
	if url == "" {
		t.Skipf("%s is not set: skipping MariaDB (.ci/run starts a throwaway server and sets it)", mytest.Env)
	}
	db, err := sql.Open("mysql", mytest.DSN(t, url))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE locks (id INTEGER PRIMARY KEY, n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	db.Exec("INSERT INTO locks VALUES (1, 0), (2, 0)")
	upd := "UPDATE locks SET n = n + 1 WHERE id = ?"
	a, _ := db.Begin()
	b, _ := db.Begin()
	defer a.Rollback()
	defer b.Rollback()
	if _, err := a.Exec(upd, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(upd, 2); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() { _, err := a.Exec(upd, 2); errs <- err }()
	time.Sleep(100 * time.Millisecond)
	go func() { _, err := b.Exec(upd, 1); errs <- err }()
	e1, e2 := <-errs, <-errs
	if Conflict(e1) == Conflict(e2) {
		t.Fatalf("one of two deadlocked transactions should get 1213: %v / %v", e1, e2)
	}
}
