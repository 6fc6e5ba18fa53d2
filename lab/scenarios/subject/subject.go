// Package subjectlab is the lab scenario "subject": what keys per user
// cost (field/subject). A value sealed under its user's own key against
// one sealed under a keyring key, warm and cold; a log-in that also
// unlocks a private user's key against a plain one; forgetting a user
// whatever the number of their values; and re-wrapping every user's key
// when the keyring rotates, by workers, on PostgreSQL when it is
// installed (SQLite otherwise).
package subjectlab

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/internal/pgcluster"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/lab"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/password"
)

// Scenario is the "subject" lab scenario.
type Scenario struct {
	// Keys and ForgetSizes override the profile's sizes (tests).
	Keys        int
	ForgetSizes []int
}

// Name returns "subject".
func (Scenario) Name() string { return "subject" }

// Title names the topic.
func (Scenario) Title() string {
	return "Keys per user: erasing a user, and data the operator cannot read"
}

// Question says what the scenario answers.
func (Scenario) Question() string {
	return "What does sealing each user's values under their own key cost — per value, at log-in, to forget a user, and to re-wrap every user's key when the keyring rotates?"
}

// Profile sizes.
var (
	FullKeys         = 1_000_000
	QuickKeys        = 20_000
	FullForgetSizes  = []int{1_000, 10_000, 100_000}
	QuickForgetSizes = []int{1_000, 10_000}
	Workers          = []int{1, 2, 4}
)

// Case names.
const (
	valueSize      = 500
	forgetTrials   = 5
	caseUnwrap     = "unwrap/one-subject-key"
	caseColdOpen   = "field/open/500B/subject-cold"
	caseLoginPlain = "login/plain"
	caseLoginKey   = "login/key-bearing"
	caseLoginPriv  = "login/private-unlock"
	caseDB         = "database"
)

func valueCase(op, impl string) string { return fmt.Sprintf("field/%s/500B/%s", op, impl) }
func ratioCase(op string) string       { return fmt.Sprintf("field/%s/500B/subject-vs-keyring", op) }
func forgetCase(n int) string          { return fmt.Sprintf("forget/%d-values", n) }
func resealCase(w int) string          { return fmt.Sprintf("reseal-keys/workers-%d", w) }

// Run measures every part, each on its own.
func (s Scenario) Run(ctx context.Context, env *lab.Env) error {
	e, closeAll, err := open(ctx, env)
	if err != nil {
		return err
	}
	defer closeAll()
	env.Record(lab.Derived("subject", caseDB, map[string]any{"database": e.name}, "database", "", 1, "the database the store's lookups, forgets and re-wraps ran on"))
	steps := []func(context.Context, *lab.Env, *world) error{perValue, cold, login, s.forget, s.resealKeys}
	for i, step := range steps {
		if err := step(ctx, env, e); err != nil {
			return err
		}
		env.Progress(i+1, len(steps))
	}
	return nil
}

// world is the scenario's database, keyring, ledger and subject store.
type world struct {
	db      *sql.DB
	dialect field.Dialect
	name    string
	kr      *keyring.Keyring
	ledger  *ledger.Ledger
}

func open(ctx context.Context, env *lab.Env) (*world, func(), error) {
	e := &world{}
	var err error
	dir, err := os.MkdirTemp("", "ward-subject-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := []func(){func() { os.RemoveAll(dir) }}
	closeAll := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	if pgcluster.Available() {
		c, err := pgcluster.Start(ctx, "")
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		cleanup = append(cleanup, func() { c.Stop() })
		if e.db, _, err = dburl.Open(c.URL); err != nil {
			closeAll()
			return nil, nil, err
		}
		e.dialect, e.name = field.Postgres, "postgresql"
		e.db.SetMaxOpenConns(16)
	} else {
		fmt.Fprintln(env.Log, "subject: initdb not found (apt-get install postgresql): measuring on SQLite")
		if e.db, _, err = dburl.Open("sqlite:" + filepath.Join(dir, "subject.db")); err != nil {
			closeAll()
			return nil, nil, err
		}
		e.dialect, e.name = field.SQLite, "sqlite"
	}
	cleanup = append(cleanup, func() { e.db.Close() })
	if e.kr, err = keyring.New(keyring.AES256GCM); err != nil {
		closeAll()
		return nil, nil, err
	}
	e.ledger = &ledger.Ledger{DB: e.db, Dialect: e.dialect}
	if err := e.ledger.Record(ctx, e.kr); err != nil {
		closeAll()
		return nil, nil, err
	}
	return e, closeAll, nil
}

func (e *world) store(ctx context.Context, ns string, ttl time.Duration) (*subject.Store, error) {
	return subject.Open(ctx, subject.Config{DB: e.db, Dialect: e.dialect, Keyring: e.kr, Ledger: e.ledger, Namespace: ns, TTL: ttl})
}

// perValue interleaves sealing (and opening) 500 B under a keyring key
// and under a warm subject key, through the field layer, reused buffers.
func perValue(ctx context.Context, env *lab.Env, e *world) error {
	st, err := e.store(ctx, "lab-warm", time.Hour)
	if err != nil {
		return err
	}
	byKeyring, err := field.NewColumn(e.kr, "messages", "body", field.Bind("user_id"))
	if err != nil {
		return err
	}
	bySubject, err := field.NewColumn(e.kr, "messages", "body", field.Bind("user_id"), field.PerSubject(st, "user_id"))
	if err != nil {
		return err
	}
	pt := make([]byte, valueSize)
	rand.Read(pt)
	row := field.RowInt(42).With(int64(7))
	for _, op := range []string{"seal", "open"} {
		var ops []func(int) error
		for _, col := range []*field.Column{byKeyring, bySubject} {
			ct, err := col.AppendSeal(nil, row, pt) // warms the subject's key
			if err != nil {
				return err
			}
			buf := make([]byte, 0, len(ct)+64)
			if op == "seal" {
				ops = append(ops, func(n int) error {
					for range n {
						if _, err := col.AppendSeal(buf[:0], row, pt); err != nil {
							return err
						}
					}
					return nil
				})
			} else {
				ops = append(ops, func(n int) error {
					for range n {
						if _, err := col.AppendOpen(buf[:0], row, ct); err != nil {
							return err
						}
					}
					return nil
				})
			}
		}
		rounds, err := lab.Interleave(ctx, env.Sampling, ops...)
		if err != nil {
			return err
		}
		p := map[string]any{"op": op, "size": valueSize, "alg": "AES-256-GCM"}
		env.Record(lab.FromSamples("subject", valueCase(op, "keyring"), p, "time", "ns", rounds[0]),
			lab.FromSamples("subject", valueCase(op, "subject-warm"), p, "time", "ns", rounds[1]),
			lab.PairedRatio("subject", ratioCase(op), p, "ratio", rounds[1], rounds[0],
				"per-round ratio: a warm subject key (the cache's lookup included) over a keyring key, interleaved"))
	}
	return nil
}

// cold measures one unwrap of a subject key, and an open whose key is not
// cached: the key row and tombstone read from the database, then the
// unwrap.
func cold(ctx context.Context, env *lab.Env, e *world) error {
	sk, err := keyring.NewSubjectKey(keyring.AES256GCM, 7)
	if err != nil {
		return err
	}
	wctx := []byte("lab\x00subject\x007")
	wrapped, err := e.kr.WrapSubjectKey(sk, wctx)
	if err != nil {
		return err
	}
	samples, err := lab.Measure(ctx, env.Sampling, func(n int) error {
		for range n {
			if _, err := e.kr.UnwrapSubjectKey(wrapped, wctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	env.Record(lab.FromSamples("subject", caseUnwrap, map[string]any{"alg": "AES-256-GCM"}, "time", "ns", samples))
	st, err := e.store(ctx, "lab-cold", time.Nanosecond) // every open misses the cache
	if err != nil {
		return err
	}
	col, err := field.NewColumn(e.kr, "messages", "body", field.Bind("user_id"), field.PerSubject(st, "user_id"))
	if err != nil {
		return err
	}
	row := field.RowInt(1).With(int64(1))
	ct, err := col.AppendSeal(nil, row, make([]byte, valueSize))
	if err != nil {
		return err
	}
	samples, err = lab.Measure(ctx, env.Sampling, func(n int) error {
		for range n {
			if _, err := col.AppendOpen(nil, row, ct); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	env.Record(lab.FromSamples("subject", caseColdOpen, map[string]any{"size": valueSize, "database": e.name}, "time", "ns", samples))
	return nil
}

// login interleaves three log-ins under the default policy (OWASP
// Argon2id, peppered): a plain hash's, a key-bearing hash's (the same
// Argon2 call with a 64-byte tag), and a private user's (key-bearing, then
// unwrapping the user's key and sealing it into the session).
func login(ctx context.Context, env *lab.Env, e *world) error {
	h, err := password.NewHasher(password.Policy{Pepper: e.kr}, password.NewLimiter(password.LimiterConfig{}))
	if err != nil {
		return err
	}
	pw := []byte("correct horse battery staple")
	plain, err := h.Hash(ctx, pw)
	if err != nil {
		return err
	}
	keyed, secret, err := h.HashWithKey(ctx, pw)
	if err != nil {
		return err
	}
	st, err := e.store(ctx, "lab-login", time.Hour)
	if err != nil {
		return err
	}
	if _, _, err := st.MakePrivate(ctx, "alice", secret, subject.PrivateOptions{}); err != nil {
		return err
	}
	var tokens [][]byte
	defer func() {
		for _, t := range tokens { // log-outs, outside the timed log-ins
			st.EndSession(context.WithoutCancel(ctx), t)
		}
	}()
	rounds, err := lab.Interleave(ctx, env.Sampling,
		func(n int) error {
			for range n {
				if _, err := h.Verify(ctx, pw, plain); err != nil {
					return err
				}
			}
			return nil
		},
		func(n int) error {
			for range n {
				s, _, err := h.VerifyWithKey(ctx, pw, keyed)
				if err != nil {
					return err
				}
				clear(s)
			}
			return nil
		},
		func(n int) error {
			for range n {
				token, err := privateLogin(ctx, h, st, pw, keyed)
				if err != nil {
					return err
				}
				tokens = append(tokens, token)
			}
			return nil
		})
	if err != nil {
		return err
	}
	p, _, _ := password.Inspect(plain)
	params := map[string]any{"params": p.String()}
	env.Record(lab.FromSamples("subject", caseLoginPlain, params, "time", "ns", rounds[0]),
		lab.FromSamples("subject", caseLoginKey, params, "time", "ns", rounds[1]),
		lab.FromSamples("subject", caseLoginPriv, params, "time", "ns", rounds[2]),
		lab.PairedRatio("subject", "login/key-bearing-vs-plain", params, "ratio", rounds[1], rounds[0],
			"one Argon2id call with a 64-byte tag over one with a 32-byte tag, interleaved"),
		lab.PairedRatio("subject", "login/private-vs-plain", params, "ratio", rounds[2], rounds[0],
			"a private user's log-in (key-bearing hash, the user's key read and unwrapped, its session copy stored) over a plain one, interleaved"))
	return nil
}

// privateLogin is one log-in of the private user alice: her key-bearing
// hash verified, her key unwrapped with its secret and a session started;
// it returns the session's token.
func privateLogin(ctx context.Context, h *password.Hasher, st *subject.Store, pw []byte, keyed string) ([]byte, error) {
	s, _, err := h.VerifyWithKey(ctx, pw, keyed)
	if err != nil {
		return nil, err
	}
	u, err := st.Unlock(ctx, "alice", s)
	clear(s)
	if err != nil {
		return nil, err
	}
	defer u.Destroy()
	token := make([]byte, 32)
	rand.Read(token)
	return token, st.StartSession(ctx, u, token, time.Now().Add(time.Hour))
}

// forget times forgetting users who each hold n values, for each n: the
// values are not touched, so the time does not grow with them.
func (s Scenario) forget(ctx context.Context, env *lab.Env, e *world) error {
	sizes := profileSize(env, s.ForgetSizes, s.ForgetSizes != nil, FullForgetSizes, QuickForgetSizes)
	st, err := e.store(ctx, "lab-forget", time.Hour)
	if err != nil {
		return err
	}
	table := "lab_subject_messages"
	blob := "BLOB"
	if e.dialect == field.Postgres {
		blob = "BYTEA"
	}
	if _, err := e.db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s (id BIGINT PRIMARY KEY, user_id TEXT NOT NULL, body %s NOT NULL)`, table, blob)); err != nil {
		return err
	}
	defer e.db.ExecContext(context.WithoutCancel(ctx), `DROP TABLE `+table)
	col, err := field.NewColumn(e.kr, table, "body", field.Bind("user_id"), field.PerSubject(st, "user_id"))
	if err != nil {
		return err
	}
	next := int64(1)
	for _, n := range sizes {
		var times []float64
		for trial := range forgetTrials {
			user := fmt.Sprintf("user-%d-%d", n, trial)
			ct, err := col.AppendSeal(nil, field.RowInt(next).With(user), make([]byte, valueSize))
			if err != nil {
				return err
			}
			// n rows of the user, each holding a value sealed under the
			// user's key (one value copied: a forget reads none of them).
			if err := fill(ctx, e, table, next, n, user, ct); err != nil {
				return err
			}
			first := next
			next += int64(n)
			start := time.Now()
			if err := st.Forget(ctx, user); err != nil {
				return err
			}
			times = append(times, lab.Milliseconds(time.Since(start)))
			if _, err := col.AppendOpen(nil, field.RowInt(first).With(user), ct); !errors.Is(err, field.ErrSubjectErased) {
				return fmt.Errorf("subject: a forgotten user's value: %v", err)
			}
		}
		env.Record(lab.FromSamples("subject", forgetCase(n), map[string]any{"values": n, "database": e.name}, "time", "ms", times))
		fmt.Fprintf(env.Log, "subject: forget with %d values: median %.2f ms\n", n, median(times))
	}
	return nil
}

// fill inserts n rows for user, ids from first, with one stored value.
func fill(ctx context.Context, e *world, table string, first int64, n int, user string, ct []byte) error {
	var q string
	if e.dialect == field.Postgres {
		q = fmt.Sprintf(`INSERT INTO %s (id, user_id, body) SELECT g, $1, $2 FROM generate_series($3::bigint, $4::bigint) AS g`, table)
	} else {
		q = fmt.Sprintf(`WITH RECURSIVE g(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM g WHERE i < ?) INSERT INTO %s (id, user_id, body) SELECT i, ?, ? FROM g`, table)
	}
	var err error
	if e.dialect == field.Postgres {
		_, err = e.db.ExecContext(ctx, q, user, ct, first, first+int64(n)-1)
	} else {
		_, err = e.db.ExecContext(ctx, q, first, first+int64(n)-1, user, ct)
	}
	return err
}

// resealKeys fills the key table with keys wrapped under the primary, then
// for each worker count rotates the keyring and re-wraps them all.
func (s Scenario) resealKeys(ctx context.Context, env *lab.Env, e *world) error {
	n := profileSize(env, s.Keys, s.Keys != 0, FullKeys, QuickKeys)
	st, err := e.store(ctx, "lab-reseal", time.Hour)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := seedKeys(ctx, st, n); err != nil {
		return err
	}
	fmt.Fprintf(env.Log, "subject: %d subject keys stored in %v\n", n, time.Since(start).Round(time.Millisecond))
	for _, w := range Workers {
		if _, err := keyring.NewManager(e.kr).AddPrimary(ctx, keyring.AES256GCM); err != nil {
			return err
		}
		if err := e.ledger.Record(ctx, e.kr); err != nil {
			return err
		}
		begin := time.Now()
		res, err := st.Reseal(ctx, subject.ResealOptions{Workers: w, Batch: 1000})
		if err != nil {
			return err
		}
		el := time.Since(begin)
		if res.Resealed != int64(n) {
			return fmt.Errorf("subject: re-wrapped %d of %d keys", res.Resealed, n)
		}
		env.Record(lab.Derived("subject", resealCase(w), map[string]any{"workers": w, "keys": n, "database": e.name}, "rows_per_second", "rows/s",
			float64(n)/el.Seconds(), fmt.Sprintf("%d keys re-wrapped from the previous primary in %v, batches of 1,000, one transaction each", n, el.Round(time.Millisecond))))
		fmt.Fprintf(env.Log, "subject: re-wrap, %d workers: %.0f keys/s\n", w, float64(n)/el.Seconds())
	}
	return nil
}

// seedKeys gives n subjects of the store their first keys, in bulk.
func seedKeys(ctx context.Context, st *subject.Store, n int) error {
	const chunk = 10_000
	for from := 0; from < n; from += chunk {
		subjects := make([]string, 0, chunk)
		for i := from; i < min(from+chunk, n); i++ {
			subjects = append(subjects, fmt.Sprintf("u%08d", i))
		}
		created, err := st.Provision(ctx, subjects)
		if err != nil {
			return err
		}
		if created != int64(len(subjects)) {
			return fmt.Errorf("subject: provisioned %d of %d keys", created, len(subjects))
		}
	}
	return nil
}

// profileSize is override when set, else the profile's size.
func profileSize[T any](env *lab.Env, override T, set bool, full, quick T) T {
	switch {
	case set:
		return override
	case env.Quick:
		return quick
	}
	return full
}

func median(xs []float64) float64 { _, m, _, _ := lab.Summary(xs); return m }
