package reseal

import (
	"context"
	"crypto/fips140"
	"fmt"
	"testing"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleetgate"
)

// TestReencryptMovesV3ToV4: values a fleet wrote in ciphertext v3 (v4 not
// open) are current for a job that writes v3 too, and stale once v4 is
// open: the job re-seals every one as v4, under the same key, and each
// still opens; the census then counts v4 only.
func TestReencryptMovesV3ToV4(t *testing.T) {
	if fips140.Enabled() {
		t.Skip("FIPS 140-3 mode: ciphertext v3 is not sealed")
	}
	forEachDB(t, func(t *testing.T, d testDB) {
		ctx := context.Background()
		kr := newKR(t)
		closed := fleetgate.New()
		v3 := mustColumn(t, kr, d.table(t, "v3"), "body", field.WithForms(closed))
		const n = 200
		fillTable(t, d, v3, n)
		job := &Job{DB: d.db, Dialect: d.dialect, Column: v3, Key: "id"}
		c, err := job.Count(ctx)
		if err != nil || c.PerVersion[3] != n-n/50 || !c.Done() {
			t.Fatalf("census while v4 is closed: %+v %v", c, err)
		}
		closed.SetOpen([]fleetgate.Form{fleetgate.Ciphertext(4)})
		if c, _ := job.Count(ctx); c.Done() {
			t.Fatalf("census once v4 opened: %+v", c)
		}
		st, err := job.Run(ctx)
		if err != nil || st.Resealed != n-n/50 {
			t.Fatalf("job: %+v %v", st, err)
		}
		c, err = job.Count(ctx)
		if err != nil || c.PerVersion[4] != n-n/50 || c.PerVersion[3] != 0 || !c.Done() {
			t.Fatalf("census after the job: %+v %v", c, err)
		}
		checkAll(t, d, v3, func(id int64) string { return fmt.Sprint("message ", id) })
	})
}
