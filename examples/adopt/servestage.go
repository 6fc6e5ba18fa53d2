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
	"strconv"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// StageOptions configure [ServeStage].
type StageOptions struct {
	DB      *sql.DB
	Dialect field.Dialect
	// Keyring is nil at StagePlain.
	Keyring *keyring.Keyring
	Stage   Stage
	// Heartbeat is the fleet registry's (default 1 s).
	Heartbeat time.Duration
}

// ServeStage runs the application at one stage of a rolling adoption as
// one process of its fleet (the application before ward at StagePlain,
// which registers nothing). It answers
//
//	GET  /users?email=E                  → 200 {"id", "email"} or 404
//	GET  /users/{id}                     → 200 {"id", "email"}
//	POST /users {email, name, password}  → 201 {"id"} or 409
//	POST /login {email, password}        → 200 {"id"} or 401
//	POST /notes {id, owner, body}        → 201
//	GET  /notes/{id}                     → 200 {"owner", "body"}
//	GET  /forms                          → 200 {"open": [...]}
//
// on ln until ctx ends, then drains (requests under way finish), leaves the
// fleet and returns. A process that lacks a form the database depends on
// refuses to start with a [*fleetgate.MissingError].
func ServeStage(ctx context.Context, o StageOptions, ln net.Listener, out io.Writer) error {
	s, member, err := startStage(ctx, o)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.mux(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	id := "unregistered"
	if member != nil {
		id = member.ID()
	}
	fmt.Fprintf(out, "adopt: serving on http://%s/ (stage %v, registered as %s)\n", ln.Addr(), o.Stage, id)
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = srv.Shutdown(sctx) // drain
		cancel()
	}
	if member != nil {
		err = errors.Join(err, member.Leave(context.Background()))
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// startStage checks the ledger, builds the stage and joins the fleet.
func startStage(ctx context.Context, o StageOptions) (*staged, *fleet.Member, error) {
	if o.Stage == StagePlain {
		s, err := newStaged(ctx, o.DB, o.Dialect, nil, nil, o.Stage)
		return s, nil, err
	}
	lg := &ledger.Ledger{DB: o.DB, Dialect: o.Dialect}
	if err := lg.Check(ctx, o.Keyring); err != nil {
		return nil, nil, fmt.Errorf("adopt: refusing keyring %s: %w", o.Keyring.ID(), err)
	}
	if err := lg.Record(ctx, o.Keyring); err != nil {
		return nil, nil, err
	}
	s, err := newStaged(ctx, o.DB, o.Dialect, o.Keyring, lg, o.Stage)
	if err != nil {
		return nil, nil, err
	}
	if err := lg.RecordColumns(ctx, o.Keyring, ledger.ColumnOf(s.app.Email, "id"), ledger.ColumnOf(s.notes, "id")); err != nil {
		return nil, nil, err
	}
	if err := o.Keyring.Watch(ctx, time.Second, nil); err != nil {
		return nil, nil, err
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = time.Second
	}
	member, err := (&fleet.Registry{DB: o.DB, Dialect: o.Dialect, Gate: s.gate, Ledger: lg}).Join(ctx, o.Keyring, o.Heartbeat, nil)
	if err != nil {
		return nil, nil, err
	}
	return s, member, nil
}

// mux routes the stage's requests.
func (s *staged) mux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /users", func(w http.ResponseWriter, r *http.Request) {
		id, email, err := s.app.FindByEmail(r.Context(), r.URL.Query().Get("email"))
		answer(w, err, id != 0, http.StatusOK, map[string]any{"id": id, "email": email})
	})
	m.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		email, err := s.app.EmailOf(r.Context(), id)
		answer(w, err, true, http.StatusOK, map[string]any{"id": id, "email": email})
	})
	m.HandleFunc("POST /users", func(w http.ResponseWriter, r *http.Request) {
		var u struct{ Email, Name, Password string }
		if !decode(w, r, &u) {
			return
		}
		id, err := s.signUp(r.Context(), u.Email, u.Name, u.Password)
		if errors.Is(err, ErrTaken) {
			http.Error(w, "taken", http.StatusConflict)
			return
		}
		answer(w, err, true, http.StatusCreated, map[string]any{"id": id})
	})
	m.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		var u struct{ Email, Password string }
		if !decode(w, r, &u) {
			return
		}
		id, err := s.logIn(r.Context(), u.Email, u.Password)
		if errors.Is(err, ErrLogin) {
			http.Error(w, "wrong address or password", http.StatusUnauthorized)
			return
		}
		answer(w, err, true, http.StatusOK, map[string]any{"id": id})
	})
	m.HandleFunc("POST /notes", func(w http.ResponseWriter, r *http.Request) {
		var n struct {
			ID          int64
			Owner, Body string
		}
		if !decode(w, r, &n) {
			return
		}
		answer(w, s.addNote(r.Context(), n.ID, n.Owner, n.Body), true, http.StatusCreated, map[string]any{"id": n.ID})
	})
	m.HandleFunc("GET /notes/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		owner, body, err := s.note(r.Context(), id)
		answer(w, err, true, http.StatusOK, map[string]any{"owner": owner, "body": body})
	})
	m.HandleFunc("GET /forms", func(w http.ResponseWriter, r *http.Request) {
		open := []fleetgate.Form{}
		for _, f := range s.gate.Declared() {
			if s.gate.Allows(f) {
				open = append(open, f)
			}
		}
		answer(w, nil, true, http.StatusOK, map[string]any{"open": open})
	})
	return m
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(v); err != nil {
		http.Error(w, "malformed request", http.StatusBadRequest)
		return false
	}
	return true
}

// answer writes err as a 500 (a failed request, failed closed), a 404 when
// not found, or v with status.
func answer(w http.ResponseWriter, err error, found bool, status int, v any) {
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	case !found:
		http.NotFound(w, nil)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
}
