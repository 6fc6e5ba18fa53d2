package chat

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/dburl"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/password"
)

// Options configure the service.
type Options struct {
	// DB is sqlite:PATH or a postgres:// URL.
	DB string
	// KeyringPath is the keyring file, created on first start.
	KeyringPath string
	// KMSURL names the key that wraps the keyring (local:// uses
	// WARD_MASTER_KEY).
	KMSURL string
}

// App is a running chat service: database, keyring, store and HTTP server.
type App struct {
	db      *sql.DB
	dialect field.Dialect
	kr      *keyring.Keyring
	ks      kms.KeyService
	krPath  string
	store   *Store
	server  *Server
}

// Open loads (or creates) the keyring through the KMS, opens the database
// and runs its migrations. encrypt=false stores plaintext and exists only
// for the lab's baseline.
func Open(ctx context.Context, o Options, encrypt bool) (*App, error) {
	ks, err := kmsurl.Open(ctx, o.KMSURL, nil)
	if err != nil {
		return nil, err
	}
	kr, err := keyring.Load(ctx, o.KeyringPath, ks)
	if errors.Is(err, os.ErrNotExist) {
		kr, err = keyring.Create(ctx, o.KeyringPath, ks, keyring.AES256GCM)
	}
	if err != nil {
		return nil, err
	}
	db, dialect, err := dburl.Open(o.DB)
	if err != nil {
		return nil, err
	}
	store, err := newStore(db, dialect, kr, encrypt)
	if err != nil {
		db.Close()
		return nil, err
	}
	hasher, err := password.NewHasher(password.Policy{}, password.NewLimiter(password.LimiterConfig{}))
	if err != nil {
		return nil, err
	}
	srv, err := newServer(store, hasher, StandInAssistant{})
	if err != nil {
		return nil, err
	}
	return &App{db: db, dialect: dialect, kr: kr, ks: ks, krPath: o.KeyringPath, store: store, server: srv}, nil
}

func (a *App) Serve(ctx context.Context, listen string, out io.Writer) error {
	hs := &http.Server{Addr: listen, Handler: a.server.Handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	go func() { <-ctx.Done(); hs.Close() }()
	// Live rotation: SIGHUP rotates this process's keyring and re-encrypts
	// while users keep chatting (compare-and-swap never loses a write).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			if err := a.Rotate(ctx, out); err != nil {
				fmt.Fprintln(os.Stderr, "ward-chat: rotation:", err)
			}
		}
	}()
	fmt.Fprintf(out, "ward chat on http://%s/ (keyring %s, primary key %v)\n", listen, a.krPath, a.kr.Primary().ID)
	if err := hs.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// inspect prints what someone with database access sees.
func (a *App) Inspect(ctx context.Context, out io.Writer) error {
	rows, err := a.db.QueryContext(ctx, `SELECT id, role, body FROM messages ORDER BY created`)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Fprintln(out, "messages as stored (what an operator sees):")
	for rows.Next() {
		var id int64
		var role string
		var raw []byte
		if err := rows.Scan(&id, &role, &raw); err != nil {
			return err
		}
		h, err := keyring.ParseHeader(raw)
		key := "not a ward ciphertext"
		if err == nil {
			key = fmt.Sprintf("%v, key %v", h.Algorithm, h.KeyID)
		}
		preview := fmt.Sprintf("%x", raw)
		if len(preview) > 48 {
			preview = preview[:48] + "…"
		}
		fmt.Fprintf(out, "  %d %-9s %4d bytes  %s  %s\n", id, role, len(raw), key, preview)
	}
	return rows.Err()
}

// rotate adds a new primary key, saves the keyring, and re-encrypts every
// encrypted column; safe while the service runs (compare-and-swap).
func (a *App) Rotate(ctx context.Context, out io.Writer) error {
	id, err := a.kr.Rotate(ctx, keyring.AES256GCM)
	if err != nil {
		return err
	}
	for _, col := range []*field.Column{a.store.body, a.store.title, a.store.email} {
		st, err := (&field.Reencrypt{DB: a.db, Dialect: a.dialect, Column: col, Key: "id"}).Run(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s.%s: %d re-encrypted under %v\n", col.Table(), col.Name(), st.Reencrypted, id)
	}
	return nil
}

// Handler returns the service's HTTP handler.
func (a *App) Handler() http.Handler { return a.server.Handler() }

// Close closes the database.
func (a *App) Close() error { return a.db.Close() }

// Keyring returns the service's keyring.
func (a *App) Keyring() *keyring.Keyring { return a.kr }
