package migratelab

import (
	"context"
	"strings"
	"testing"

	"github.com/wardlab/ward/internal/myserver"
	"github.com/wardlab/ward/lab"
)

// TestScenario runs the scenario on a small table (PostgreSQL when initdb
// is installed, else SQLite) and checks every job and the report.
func TestScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a database and runs jobs")
	}
	env := lab.NewEnv("migrate", true, nil, nil)
	if err := (Scenario{Rows: 3000}).Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	rs := lab.Results(env.Results())
	db, _ := rs.Get(dbCase, "rows")
	for _, w := range Workers {
		for _, job := range []string{"encrypt-existing", "rotate"} {
			if r, ok := rs.Get(jobKey{job, w, 500}.name(), "rows_per_second"); !ok || r.Median <= 0 {
				t.Fatalf("%s at %d workers: %+v", job, w, r)
			}
			if r, ok := rs.Get(jobKey{job, w, 500}.name(), "cpu_per_1000_rows"); !ok || !(r.Median > 0) {
				t.Fatalf("%s at %d workers, ward's CPU: %+v", job, w, r)
			}
		}
	}
	if lab.Str(db.Params, "database") == "postgresql" {
		for _, ref := range []string{pgpSym, encryptIV, dbUpdate} {
			if r, ok := rs.Get(ref, "rows_per_second"); !ok || r.Source != lab.SourceReference {
				t.Fatalf("%s: %+v", ref, r)
			}
		}
	}
	if myserver.Available() {
		for _, c := range []string{mariaPrefix + jobKey{"encrypt-existing", 1, 500}.name(), mariaPrefix + jobKey{"rotate", 1, 500}.name(), aesEncrypt} {
			if r, ok := rs.Get(c, "rows_per_second"); !ok || r.Median <= 0 {
				t.Fatalf("%s on MariaDB: %+v", c, r)
			}
		}
	}
	if r, ok := rs.Get(appBottleneck, "p95_ratio"); !ok || r.Note == "" {
		t.Fatalf("no saturated resource named: %+v", r)
	}
	if r, ok := rs.Get(appRatio, "p95_ratio"); !ok || r.Median <= 0 {
		t.Fatalf("app loop: %+v", r)
	}
	sec, err := Scenario{}.Report(rs)
	if err != nil || len(sec.Charts) != 1 || len(sec.Tables[0].Rows) < 8 || len(sec.Answer) < 2 {
		t.Fatalf("section: %v %+v", err, sec)
	}
	if lab.Str(db.Params, "database") == "postgresql" && !strings.Contains(strings.Join(sec.Answer, " "), "The job's floor") {
		t.Fatalf("no floor in the answers: %q", sec.Answer)
	}
	if _, ok := rs.Get(mariaCase, "rows"); ok && (len(sec.Tables) != 2 || len(sec.Tables[1].Rows) != 4) {
		t.Fatalf("no MariaDB table: %+v", sec.Tables)
	}
	t.Logf("%s: %v", lab.Str(db.Params, "database"), sec.Answer)
}
