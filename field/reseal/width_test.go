package reseal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/mytest"
)

// TestJobRefusesOverlong: a VARCHAR(255) holding a 192-character e-mail
// address cannot hold its ciphertext (311 characters in the text form). The dry run says
// so and how wide the column must be; the job leaves that row as it is
// and fails it with ErrTooLong before any write, and writes the others,
// where the database would refuse the batch (strict) or cut the value
// short (not strict). SQLite enforces no width: every value is sealed.
func TestJobRefusesOverlong(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		table := d.table(t, "users")
		if _, err := d.db.Exec(fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, email VARCHAR(255))`, table)); err != nil {
			t.Fatal(err)
		}
		long := strings.Repeat("a", 180) + "@example.com"
		for i, e := range []string{"alice@example.com", long, "bob@example.com"} {
			if _, err := d.db.Exec(d.q(fmt.Sprintf(`INSERT INTO %s (id, email) VALUES (?, ?)`, table)), i+1, e); err != nil {
				t.Fatal(err)
			}
		}
		col := mustColumn(t, newKR(t), table, "email", field.WithEncoding(field.Text), field.AcceptPlaintext())
		job := &Job{DB: d.db, Dialect: d.dialect, Column: col, Key: "id", FromPlaintext: true}
		c, err := job.Count(ctx)
		need := int64(col.SealedSize(len(long)))
		if err != nil || c.Longest != need || need <= 255 {
			t.Fatalf("census: %+v %v (want the longest at %d)", c, err, need)
		}
		st, err := job.Run(ctx)
		if d.name == "sqlite" {
			if err != nil || c.Width != 0 || c.TooLong != 0 || st.Plaintext != 3 {
				t.Fatalf("sqlite: %+v %+v %v", c, st, err)
			}
			return
		}
		if c.Width != 255 || c.TooLong != 1 {
			t.Fatalf("census: %+v", c)
		}
		var tooLong *TooLongError
		if !errors.Is(err, ErrUnreadableRows) || st.Failed != 1 || st.Plaintext != 2 || !errors.As(st.FirstFailure, &tooLong) ||
			tooLong.Need != need || tooLong.Width != 255 || tooLong.Row != "2" {
			t.Fatalf("job: %+v %v", st, err)
		}
		var stored string
		if err := d.db.QueryRow(fmt.Sprintf(`SELECT email FROM %s WHERE id = 2`, table)).Scan(&stored); err != nil || stored != long {
			t.Fatalf("the overlong row changed: %q %v", stored, err)
		}
		// Widened, the job finishes it.
		alter := `ALTER TABLE %s ALTER COLUMN email TYPE VARCHAR(512)`
		if d.name == "mysql" {
			alter = `ALTER TABLE %s MODIFY email VARCHAR(512)`
		}
		if _, err := d.db.Exec(fmt.Sprintf(alter, table)); err != nil {
			t.Fatal(err)
		}
		// A new job process: PostgreSQL's cached plans of the old column
		// type are on the pool's connections.
		d.db.SetMaxIdleConns(0)
		d.db.SetMaxIdleConns(2)
		if st, err := job.Run(ctx); err != nil || st.Plaintext != 1 {
			t.Fatalf("after widening: %+v %v", st, err)
		}
		if c, err := job.Count(ctx); err != nil || !c.Done() || c.Width != 512 || c.TooLong != 0 {
			t.Fatalf("census after: %+v %v", c, err)
		}
	})
}

// TestJobRefusesNonStrictMySQL: on a MySQL/MariaDB session without a
// strict sql_mode, an overlong value is cut short with a warning: the job
// refuses to run there, names the setting, and writes nothing.
func TestJobRefusesNonStrictMySQL(t *testing.T) {
	forEachDB(t, func(t *testing.T, d testDB) {
		if d.name != "mysql" {
			t.Skip("sql_mode is MySQL's and MariaDB's")
		}
		ctx := context.Background()
		loose := mytest.NonStrict(t, d.dsn)
		table := d.table(t, "notes")
		plainTable(t, d, table, "BIGINT", 10, func(i int) any { return i })
		col := mustColumn(t, newKR(t), table, "body", field.WithEncoding(field.Text), field.AcceptPlaintext())
		job := &Job{DB: loose, Dialect: d.dialect, Column: col, Key: "id", FromPlaintext: true}
		st, err := job.Run(ctx)
		if !errors.Is(err, ErrNotStrict) || !strings.Contains(err.Error(), "@@SESSION.sql_mode") || st.Scanned != 0 {
			t.Fatalf("%+v %v", st, err)
		}
		// The same server, strict: the job runs.
		job.DB = d.db
		if _, err := job.Run(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
