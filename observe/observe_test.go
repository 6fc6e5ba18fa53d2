package observe_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/internal/dbtest"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/lifecycle"
	"github.com/wardlab/ward/observe"
	"github.com/wardlab/ward/password"
)

// recorder keeps every call.
type recorder struct {
	mu     sync.Mutex
	values []observe.Value
	kms    []observe.KMSCall
	jobs   []observe.JobBatch
	steps  []observe.RotationStep
	hashes []observe.Hash
}

func (r *recorder) Value(v observe.Value)  { r.mu.Lock(); r.values = append(r.values, v); r.mu.Unlock() }
func (r *recorder) KMS(c observe.KMSCall)  { r.mu.Lock(); r.kms = append(r.kms, c); r.mu.Unlock() }
func (r *recorder) Job(b observe.JobBatch) { r.mu.Lock(); r.jobs = append(r.jobs, b); r.mu.Unlock() }
func (r *recorder) Rotation(s observe.RotationStep) {
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
}
func (r *recorder) Hash(h observe.Hash) { r.mu.Lock(); r.hashes = append(r.hashes, h); r.mu.Unlock() }

// TestEveryPathReports: with an observer set, ward reports each seal and
// open (key, class, the kind of a failure), each key-service call and
// cache hit, each job batch, each step of a rotation and each hash; with
// none (Set(nil)), nothing.
func TestEveryPathReports(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	observe.Set(rec)
	defer observe.Set(nil)
	mk := local.Generate()
	kr, err := keyring.Create(ctx, filepath.Join(t.TempDir(), "kr.json"), mk, keyring.AES256GCM)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.kms) != 1 || rec.kms[0].Provider != "local" || rec.kms[0].Op != "Encrypt" {
		t.Fatalf("creating the keyring file: %+v", rec.kms)
	}
	col, _ := field.NewColumn(kr, "notes", "body")
	ct, _ := col.Seal(field.RowInt(1), []byte("hello"))
	col.Open(field.RowInt(1), ct)
	col.Open(field.RowInt(2), ct)
	id := uint32(kr.Primary().ID)
	want := []observe.Value{{Op: observe.Seal, Key: id, Class: "keyring"}, {Op: observe.Open, Key: id, Class: "keyring"},
		{Op: observe.Open, Key: id, Class: "keyring", ErrKind: "wrong-context"}}
	if !slices.Equal(rec.values, want) {
		t.Fatalf("values: %+v, want %+v", rec.values, want)
	}
	env := kms.NewEnvelope(mk, kms.EnvelopeOptions{})
	for range 2 {
		env.Seal(ctx, []byte("v"), nil, nil)
	}
	if ops := kmsOps(rec.kms[1:]); !slices.Equal(ops, []string{"Encrypt", "cache-hit"}) {
		t.Fatalf("an envelope's two seals: %v", ops)
	}
	h, _ := password.NewHasher(password.Policy{}, nil)
	enc, _ := h.Hash(ctx, []byte("correct horse"))
	h.Verify(ctx, []byte("correct horse"), enc)
	if len(rec.hashes) != 2 || rec.hashes[0].Op != "hash" || rec.hashes[1].Op != "verify" || rec.hashes[0].Scheme != "argon2id" || rec.hashes[0].Duration <= 0 {
		t.Fatalf("hashes: %+v", rec.hashes)
	}
	jobAndRotation(t, ctx, kr, rec)
	observe.Set(nil)
	n := len(rec.values)
	col.Seal(field.RowInt(1), []byte("unobserved"))
	if len(rec.values) != n {
		t.Fatal("a seal was reported with no observer set")
	}
}

func kmsOps(cs []observe.KMSCall) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Op)
	}
	return out
}

// jobAndRotation encrypts a SQLite column of 30 rows in batches of 10,
// then rotates across the (empty) fleet.
func jobAndRotation(t *testing.T, ctx context.Context, kr *keyring.Keyring, rec *recorder) {
	db, err := sql.Open("sqlite", dbtest.SQLiteDSN(filepath.Join(t.TempDir(), "app.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body BLOB)`)
	for i := 1; i <= 30; i++ {
		db.Exec(`INSERT INTO notes (id, body) VALUES (?, ?)`, i, fmt.Sprint("note ", i))
	}
	col, _ := field.NewColumn(kr, "notes", "body")
	job := &reseal.Job{DB: db, Dialect: field.SQLite, Column: col, Key: "id", BatchSize: 10, FromPlaintext: true}
	if _, err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(rec.jobs) != 3 || rec.jobs[2].Done != 30 || rec.jobs[2].Total != 30 || rec.jobs[0].Table != "notes" {
		t.Fatalf("job batches: %+v", rec.jobs)
	}
	if _, err := lifecycle.Rotate(ctx, kr, []lifecycle.Database{{Name: "app", DB: db, Dialect: field.SQLite}}, lifecycle.RotateOptions{}); err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, s := range rec.steps {
		steps = append(steps, s.Step)
	}
	if !slices.Equal(steps, []string{"added", "held", "promoted", "loaded", "resealed"}) {
		t.Fatalf("rotation steps: %v", steps)
	}
}
