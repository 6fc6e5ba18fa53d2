package reseal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/internal/keycore"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

// subjectSetup makes a file keyring with its ledger, a subject store for
// "users" and the name of a messages table (not created yet).
func subjectSetup(t *testing.T, d testDB) (*keyring.Keyring, *subject.Store, string) {
	t.Helper()
	ctx := context.Background()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), local.Generate(), keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	lg := &ledger.Ledger{DB: d.db, Dialect: d.dialect, Table: d.table(t, "ledger")}
	if err := lg.Record(ctx, kr); err != nil {
		t.Fatal(err)
	}
	store, err := subject.Open(ctx, subject.Config{DB: d.db, Dialect: d.dialect, Keyring: kr, Ledger: lg, Namespace: "users",
		TTL: time.Minute, KeysTable: d.table(t, "skeys"), TombstonesTable: d.table(t, "stombs"), SessionsTable: d.table(t, "ssess")})
	if err != nil {
		t.Fatal(err)
	}
	return kr, store, d.table(t, "msgs")
}

// TestPerSubjectMigration: a column that opts in to subject keys is moved
// by a job from keyring-key values to each subject's own key; a private
// subject's rows and a forgotten subject's are skipped and counted, never
// failed; a second run finds everything current.
func TestPerSubjectMigration(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr, store, table := subjectSetup(t, d)
		before := mustColumn(t, kr, table, "body", field.Bind("user_id"))
		if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, user_id TEXT NOT NULL, body %s)`, table, d.blob)); err != nil {
			t.Fatal(err)
		}
		users := []string{"alice", "bob", "carol", "dave"}
		const n = 80
		for i := int64(1); i <= n; i++ {
			u := users[i%4]
			ct, _ := before.SealString(field.RowInt(i).With(u), fmt.Sprintf("m%d", i))
			if _, err := d.db.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, user_id, body) VALUES (?, ?, ?)`, table)), i, u, ct); err != nil {
				t.Fatal(err)
			}
		}
		// carol goes private (her log-in gave a secret); dave is forgotten.
		secret := make([]byte, 32)
		if _, _, err := store.MakePrivate(ctx, "carol", secret, subject.PrivateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := store.Forget(ctx, "dave"); err != nil {
			t.Fatal(err)
		}
		col := mustColumn(t, kr, table, "body", field.Bind("user_id"), field.PerSubject(store, "user_id"))
		job := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", BatchSize: 16}
		c, err := job.Count(ctx)
		if err != nil || c.Current != 0 || c.SubjectSealed != 0 {
			t.Fatalf("census before: %+v %v", c, err)
		}
		st, err := job.Run(ctx)
		if err != nil || st.Resealed != n/2 || st.UserHeld != n/4 || st.Erased != n/4 {
			t.Fatalf("run: %+v %v", st, err)
		}
		c, err = job.Count(ctx)
		if err != nil || c.SubjectSealed != n/2 || c.Current != n/2 {
			t.Fatalf("census after: %+v %v", c, err)
		}
		st, err = job.Run(ctx)
		if err != nil || st.Resealed != 0 || st.Current != n/2 {
			t.Fatalf("second run: %+v %v", st, err)
		}
		// alice's and bob's values are class 2 now, and open.
		for i := int64(1); i <= n; i++ {
			u := users[i%4]
			var ct field.Ciphertext
			d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = ?`, table)), i).Scan(&ct)
			_, subjectSealed := keycore.SubjectKeyVersion(ct.Bytes())
			got, err := col.OpenString(field.RowInt(i).With(u), ct)
			switch u {
			case "alice", "bob":
				if !subjectSealed || err != nil || got != fmt.Sprintf("m%d", i) {
					t.Fatalf("row %d (%s): %v %q %v", i, u, subjectSealed, got, err)
				}
			case "carol", "dave":
				if subjectSealed || err != nil {
					t.Fatalf("row %d (%s) changed: %v %v", i, u, subjectSealed, err)
				}
			}
		}
	})
}

// TestSubjectKeyRotation: after every subject gets a new key version, a
// job moves each value to its subject's newest version; a private
// subject keeps its key and its values; nothing is lost.
func TestSubjectKeyRotation(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr, store, table := subjectSetup(t, d)
		col := mustColumn(t, kr, table, "body", field.Bind("user_id"), field.PerSubject(store, "user_id"))
		if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, user_id TEXT NOT NULL, body %s)`, table, d.blob)); err != nil {
			t.Fatal(err)
		}
		users := []string{"alice", "bob", "carol"}
		const n = 60
		for i := int64(1); i <= n; i++ {
			u := users[i%3]
			ct, err := col.SealString(field.RowInt(i).With(u), fmt.Sprintf("m%d", i))
			if err != nil {
				t.Fatal(err)
			}
			d.db.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, user_id, body) VALUES (?, ?, ?)`, table)), i, u, ct)
		}
		before := map[string]uint32{}
		for _, u := range users {
			before[u], _ = store.CurrentVersion(u)
		}
		if _, _, err := store.MakePrivate(ctx, "carol", make([]byte, 32), subject.PrivateOptions{}); err != nil {
			t.Fatal(err)
		}
		st, err := store.RotateAll(ctx)
		if err != nil || st.Subjects != 3 || st.Rotated != 2 || st.UserHeld != 1 {
			t.Fatalf("rotate: %+v %v", st, err)
		}
		for _, u := range []string{"alice", "bob"} {
			if v, err := store.CurrentVersion(u); err != nil || v != before[u]+1 {
				t.Fatalf("%s: version %d, was %d (%v)", u, v, before[u], err)
			}
		}
		job := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", BatchSize: 16}
		c, err := job.Count(ctx)
		if err != nil || c.SubjectSealed != n || c.Current != n/3 || c.Suspect != 0 {
			t.Fatalf("census after the rotation: %+v %v", c, err)
		}
		res, err := job.Run(ctx)
		if err != nil || res.Resealed != 2*n/3 {
			t.Fatalf("run: %+v %v", res, err)
		}
		if c, _ := job.Count(ctx); !c.Done() {
			t.Fatalf("census after the job: %+v", c)
		}
		for i := int64(1); i <= n; i++ {
			u := users[i%3]
			var ct field.Ciphertext
			d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = ?`, table)), i).Scan(&ct)
			v, _ := keycore.SubjectKeyVersion(ct.Bytes())
			want := before[u] + 1
			if u == "carol" {
				want = before[u]
			}
			if v != want {
				t.Fatalf("row %d (%s): version %d, want %d", i, u, v, want)
			}
			if u != "carol" {
				if got, err := col.OpenString(field.RowInt(i).With(u), ct); err != nil || got != fmt.Sprintf("m%d", i) {
					t.Fatalf("row %d: %q %v", i, got, err)
				}
			}
		}
	})
}

// TestPrivateSubjectJob: carol went private while her values were still
// under keyring keys, which the table-wide job skips (it cannot seal for
// her). A job of her rows alone, with her unlocked keys, moves them under
// her own key: afterwards none of her values opens with the keyring
// alone, every one opens with her keys, and nobody else's row changed.
func TestPrivateSubjectJob(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr, store, table := subjectSetup(t, d)
		before := mustColumn(t, kr, table, "body", field.Bind("user_id"))
		if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, user_id VARCHAR(64) NOT NULL, body %s)`, table, d.blob)); err != nil {
			t.Fatal(err)
		}
		users := []string{"alice", "carol"}
		const n = 40
		for i := int64(1); i <= n; i++ {
			u := users[i%2]
			ct, _ := before.SealString(field.RowInt(i).With(u), fmt.Sprintf("m%d", i))
			if _, err := d.db.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, user_id, body) VALUES (?, ?, ?)`, table)), i, u, ct); err != nil {
				t.Fatal(err)
			}
		}
		// Another subject whose ID differs in case only: MySQL's default
		// collation calls "CAROL" and "carol" equal; her job must not.
		other, _ := before.SealString(field.RowInt(n+1).With("CAROL"), "other")
		if _, err := d.db.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, user_id, body) VALUES (?, ?, ?)`, table)), n+1, "CAROL", other); err != nil {
			t.Fatal(err)
		}
		secret := make([]byte, 32)
		u, _, err := store.MakePrivate(ctx, "carol", secret, subject.PrivateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		col := mustColumn(t, kr, table, "body", field.Bind("user_id"), field.PerSubject(store, "user_id"))
		job := &Job{DB: d.db, Dialect: d.dialect, Column: col.WithKeys(u), Key: "id", BatchSize: 7, Subject: "carol"}
		c, err := job.Count(ctx)
		if err != nil || c.Rows != n/2 || c.Current != 0 {
			t.Fatalf("carol's census before: %+v %v", c, err)
		}
		st, err := job.Run(ctx)
		if err != nil || st.Resealed != n/2 || st.Scanned != n/2 {
			t.Fatalf("carol's job: %+v %v", st, err)
		}
		if c, err := job.Count(ctx); err != nil || c.Current != n/2 {
			t.Fatalf("carol's census after: %+v %v", c, err)
		}
		for i := int64(1); i <= n; i++ {
			who := users[i%2]
			var ct field.Ciphertext
			d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = ?`, table)), i).Scan(&ct)
			_, subjectSealed := keycore.SubjectKeyVersion(ct.Bytes())
			_, plainErr := col.OpenString(field.RowInt(i).With(who), ct)
			got, err := col.WithKeys(u).OpenString(field.RowInt(i).With(who), ct)
			switch {
			case who == "carol" && (!subjectSealed || plainErr == nil || err != nil || got != fmt.Sprintf("m%d", i)):
				t.Fatalf("carol's row %d: subject-sealed %v, keyring open %v, her open %q %v", i, subjectSealed, plainErr, got, err)
			case who == "alice" && (subjectSealed || plainErr != nil):
				t.Fatalf("alice's row %d changed: %v %v", i, subjectSealed, plainErr)
			}
		}
		var ct field.Ciphertext
		d.db.QueryRow(d.q(fmt.Sprintf(`SELECT body FROM %s WHERE id = ?`, table)), n+1).Scan(&ct)
		if got, err := col.OpenString(field.RowInt(n+1).With("CAROL"), ct); err != nil || got != "other" {
			t.Fatalf("CAROL's row changed by carol's job: %q %v", got, err)
		}
		if _, err := (&Job{DB: d.db, Dialect: d.dialect, Column: before, Key: "id", Subject: "carol"}).Count(ctx); err == nil {
			t.Fatal("a Subject job over a column not sealed per subject")
		}
	})
}
