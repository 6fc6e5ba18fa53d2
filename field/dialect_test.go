package field

import "testing"

func TestParseDialect(t *testing.T) {
	for name, want := range map[string]string{"sqlite": "sqlite", "sqlite3": "sqlite", "pgx": "postgres", "postgres": "postgres", "mysql": "mysql"} {
		if d, err := ParseDialect(name); err != nil || d.String() != want {
			t.Errorf("%s: %v %v", name, d, err)
		}
	}
	if d, err := ParseDialect("sqlserver"); err == nil || d.String() != "unknown" {
		t.Errorf("sqlserver: %v %v", d, err)
	}
}

// TestQuote: each dialect's quotes, and an identifier that would break out
// of them refused in every dialect.
func TestQuote(t *testing.T) {
	for d, want := range map[Dialect]string{SQLite: `"app"."notes"`, Postgres: `"app"."notes"`, MySQL: "`app`.`notes`"} {
		if q, err := d.Quote("app.notes"); err != nil || q != want {
			t.Errorf("%v: %s %v", d, q, err)
		}
		for _, bad := range []string{"a`b", `a"b`, "a b", "", "a.b.c", "1a"} {
			if q, err := d.Quote(bad); err == nil {
				t.Errorf("%v: %q quoted as %s", d, bad, q)
			}
		}
	}
	if d := MySQL; d.Placeholder(2) != "?" || d.Rebind("a = ? AND b = ?") != "a = ? AND b = ?" {
		t.Errorf("MySQL placeholders: %s %s", d.Placeholder(2), d.Rebind("a = ?"))
	}
}
