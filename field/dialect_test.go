package field

import "testing"

func TestParseDialect(t *testing.T) {
	for name, want := range map[string]string{"sqlite": "sqlite", "sqlite3": "sqlite", "pgx": "postgres", "postgres": "postgres"} {
		if d, err := ParseDialect(name); err != nil || d.String() != want {
			t.Errorf("%s: %v %v", name, d, err)
		}
	}
	if d, err := ParseDialect("mysql"); err == nil || d.String() != "unknown" {
		t.Errorf("mysql: %v %v", d, err)
	}
}
