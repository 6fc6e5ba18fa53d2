package adopt

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Serve runs the adopted application as one process of a fleet: it checks
// and records the database's ledger (and the e-mail column, so that a
// fleet rotation re-encrypts it), joins the process registry, re-reads the
// keyring file and the ledger's record of the e-mail's blind index every
// second (so that 'ward keyring reindex' re-keys it with the fleet
// serving), and answers
//
//	GET  /users?email=E        → 200 {"id", "email"} or 404
//	POST /users {email, name}  → 201 {"id"} or 409 (taken)
//
// on ln until ctx ends; then it drains the requests under way and leaves.
func Serve(ctx context.Context, db *sql.DB, d field.Dialect, kr *keyring.Keyring, ln net.Listener, out io.Writer) error {
	lg := &ledger.Ledger{DB: db, Dialect: d}
	if err := lg.Check(ctx, kr); err != nil {
		return fmt.Errorf("adopt: refusing keyring %s: %w", kr.ID(), err)
	}
	if err := lg.Record(ctx, kr); err != nil {
		return err
	}
	app, gate := &App{DB: db, Dialect: d}, fleetgate.New()
	if err := app.Adopt(ctx, kr, lg, gate); err != nil {
		return err
	}
	if err := app.EndMixedMode(kr); err != nil {
		return err
	}
	if err := lg.RecordColumns(ctx, kr, ledger.ColumnOf(app.Email, "id")); err != nil {
		return err
	}
	if err := kr.Watch(ctx, time.Second, nil); err != nil {
		return err
	}
	go app.Emails.Watch(ctx, time.Second, nil) // follows a re-key of the index, acknowledged on gate
	member, err := (&fleet.Registry{DB: db, Dialect: d, Gate: gate, Ledger: lg}).Join(ctx, kr, time.Second, nil)
	if err != nil {
		return err
	}
	defer member.Leave(context.WithoutCancel(ctx))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users", func(w http.ResponseWriter, r *http.Request) {
		id, email, err := app.FindByEmail(r.Context(), r.URL.Query().Get("email"))
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		case id == 0:
			http.NotFound(w, r)
		default:
			json.NewEncoder(w).Encode(map[string]any{"id": id, "email": email})
		}
	})
	mux.HandleFunc("POST /users", func(w http.ResponseWriter, r *http.Request) {
		var u struct{ Email, Name string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&u); err != nil || u.Email == "" {
			http.Error(w, "want {email, name}", http.StatusBadRequest)
			return
		}
		id, err := app.AddUser(r.Context(), u.Email, u.Name)
		switch {
		case errors.Is(err, ErrTaken):
			http.Error(w, "taken", http.StatusConflict)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"id": id})
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	drained := make(chan struct{})
	go func() { // SIGTERM: drain the requests under way, then leave the fleet (deferred)
		defer close(drained)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(out, "adopt: serving on http://%s/ (keyring %s, registered as %s)\n", ln.Addr(), kr.ID(), member.ID())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-drained
	return nil
}
