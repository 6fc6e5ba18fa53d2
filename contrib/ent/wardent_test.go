package wardent_test

import (
	"github.com/wardlab/ward/internal/mytest"
	"github.com/wardlab/ward/internal/pgtest"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	wardent "github.com/wardlab/ward/contrib/ent"
	"github.com/wardlab/ward/contrib/ent/example/ent"
	"github.com/wardlab/ward/contrib/ent/example/ent/note"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

var fields = []wardent.Field{
	{Type: "Note", Table: "notes", Column: "body", Bind: []string{"user_id"}},
	{Type: "Note", Table: "notes", Column: "email", IndexColumn: "email_index"},
}

// clients opens the ent client on SQLite (pure Go) and, when configured,
// PostgreSQL, with the codec installed.
type clientPair struct {
	c, raw *ent.Client // with the codec, and without (what the database holds)
	sent   *sentLog    // every statement c sent, with its arguments
}

// sentLog records the statements a client sends, to show what reached
// the database.
type sentLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *sentLog) log(_ context.Context, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(&l.b, v...)
}

func (l *sentLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func clients(t *testing.T, codec *wardent.Codec) map[string]clientPair {
	out := map[string]clientPair{}
	open := func(name, driver, dialectName, dsn string) {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		drv := entsql.OpenDB(dialectName, db)
		sent := &sentLog{}
		c := ent.NewClient(ent.Driver(dialect.DebugWithContext(drv, sent.log)))
		c.Use(codec.Hook())
		c.Intercept(codec.Interceptor())
		t.Cleanup(func() { c.Close() })
		out[name] = clientPair{c, ent.NewClient(ent.Driver(drv)), sent}
	}
	open("sqlite", "sqlite", "sqlite3", "file:"+filepath.Join(t.TempDir(), "ent.db")+"?_pragma=foreign_keys(1)")
	if url := pgtest.URL(t); url != "" {
		open("postgres", "pgx", "postgres", url)
	} else {
		t.Log("WARD_TEST_POSTGRES_URL is not set: PostgreSQL skipped")
	}
	if url := mytest.URL(t); url != "" {
		open("mysql", "mysql", "mysql", mytest.DSN(t, url))
	} else {
		t.Log("WARD_TEST_MYSQL_URL is not set: MariaDB skipped")
	}
	return out
}

func TestEnt(t *testing.T) {
	ctx := context.Background()
	kr, _ := keyring.New(keyring.AES256GCM)
	codec, err := wardent.New(kr, fields)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range clients(t, codec) {
		t.Run(name, func(t *testing.T) {
			c, raw := p.c, p.raw
			db := c.Note
			c.Schema.Create(ctx)
			t.Cleanup(func() { db.Delete().Exec(ctx) })
			created, err := db.Create().SetID("n1").SetUserID(1).SetBody("milk, eggs").SetEmail("Alice@Example.com").Save(ctx)
			if err != nil || created.Body != "milk, eggs" {
				t.Fatalf("create: %+v %v", created, err)
			}
			if _, err := db.Create().SetID("n2").SetUserID(2).SetBody("").Save(ctx); err != nil {
				t.Fatal(err)
			}
			stored, _ := raw.Note.Get(ctx, "n2")
			if stored.Email != nil || len(stored.Body) < 40 || stored.Body[:3] != "w4:" {
				t.Fatalf("stored: %+v", stored)
			}
			got, err := db.Get(ctx, "n1")
			if err != nil || got.Body != "milk, eggs" || got.Email == nil || *got.Email != "Alice@Example.com" {
				t.Fatalf("read back: %+v %v", got, err)
			}
			idx, _ := codec.Index("notes", "email", "alice@example.COM")
			found, err := db.Query().Where(note.EmailIndex(idx)).Only(ctx)
			if err != nil || found.ID != "n1" {
				t.Fatalf("blind index: %+v %v", found, err)
			}
			upd, err := got.Update().SetBody("milk, eggs, bread").Save(ctx)
			if err != nil || upd.Body != "milk, eggs, bread" {
				t.Fatalf("update: %+v %v", upd, err)
			}
			// A database writer moves n1 to user 2: the query fails.
			raw.Note.UpdateOneID("n1").SetUserID(2).ExecX(ctx)
			_, err = db.Get(ctx, "n1")
			var oe *field.OpenError
			if !errors.Is(err, keyring.ErrWrongContext) || !errors.As(err, &oe) || oe.Column != "body" {
				t.Fatalf("re-pointed owner: %v", err)
			}
			if _, err := db.Create().SetUserID(1).SetBody("x").Save(ctx); !errors.Is(err, wardent.ErrNoRowKey) {
				t.Fatalf("no key: %v", err)
			}
			if _, err := db.Update().Where(note.UserID(1)).SetBody("x").Save(ctx); !errors.Is(err, wardent.ErrBulkUpdate) {
				t.Fatalf("bulk update: %v", err)
			}
			// An owner change re-seals the value bound to it (one entity);
			// a bulk one is refused, naming the bound field.
			raw.Note.UpdateOneID("n1").SetUserID(1).ExecX(ctx) // undo the writer's change
			moved, err := db.UpdateOneID("n1").SetUserID(3).Save(ctx)
			if err != nil || moved.UserID != 3 || moved.Body != "milk, eggs, bread" {
				t.Fatalf("owner change: %+v %v", moved, err)
			}
			if back, err := db.Get(ctx, "n1"); err != nil || back.Body != "milk, eggs, bread" {
				t.Fatalf("after the owner change: %+v %v", back, err)
			}
			_, err = db.Update().Where(note.ID("n1")).SetUserID(4).Save(ctx)
			if !errors.Is(err, wardent.ErrOwnerChange) || !strings.Contains(err.Error(), "user_id") {
				t.Fatalf("bulk owner change: %v", err)
			}
			if back, err := db.Get(ctx, "n1"); err != nil || back.UserID != 3 {
				t.Fatalf("the refused bulk change wrote: %+v %v", back, err)
			}
		})
	}
}
