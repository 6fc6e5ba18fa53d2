package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// Forms and the fleet.
//
// The service writes only forms every registered process reads: its
// columns and row MACs share one gate (fleetgate.Gate), and it joins the fleet
// registry when it opens, so that ciphertext v4 and integrity records v2
// (bound to the database, under an integrity epoch) are written only once
// no process of the release before still serves. Every chat release since
// the schema this one migrates from seals its columns and keeps titles and
// bodies under users' own keys: those forms belong to the schema, and are
// open from the start (schemaForms).

// schemaForms are the forms the chat's schema has always had.
func (c *columns) schemaForms() []fleetgate.Form {
	var out []fleetgate.Form
	for _, col := range []interface {
		Table() string
		Name() string
	}{c.email, c.title, c.body, c.signupEmail, c.outboxTo, c.outboxBody} {
		out = append(out, fleetgate.Sealed(col.Table(), col.Name()))
	}
	return append(out, fleetgate.Subject("conversations", "title"), fleetgate.Subject("messages", "body"))
}

// openSchemaForms records the schema's forms as open in the ledger if they
// are not: no chat process reads the database without them.
func openSchemaForms(ctx context.Context, lg *ledger.Ledger, kr *keyring.Keyring, c *columns) error {
	want := c.schemaForms()
	st, err := lg.Verified(ctx, kr)
	if err != nil {
		return err
	}
	if st != nil && !slices.ContainsFunc(want, func(f fleetgate.Form) bool {
		return !slices.ContainsFunc(st.Forms, func(r ledger.Form) bool { return r.Name == f && r.IsOpen() })
	}) {
		return nil
	}
	now := time.Now().UnixMilli()
	err = lg.ChangeForms(ctx, kr, func(fs []ledger.Form) []ledger.Form {
		for _, f := range want {
			i := slices.IndexFunc(fs, func(r ledger.Form) bool { return r.Name == f })
			if i < 0 {
				fs = append(fs, ledger.Form{Name: f, Release: fleetgate.ReleaseOf(f), Since: now})
				i = len(fs) - 1
			}
			if !fs[i].IsOpen() {
				fs[i].Opened, fs[i].Waiting = now, nil
			}
		}
		return fs
	})
	if err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
		return fmt.Errorf("chat: opening the schema's forms: %w", err)
	}
	return nil
}

// joinFleet registers the process in the database's fleet registry with
// the forms gate, and advances the forms it wants at once (twice: a form's
// record is made, then opened when every registered process reads it), so
// that a lone process, or a fleet of this release, writes them at once.
func joinFleet(ctx context.Context, s *Service, gate *fleetgate.Gate) (*fleet.Member, error) {
	warn := usageWarner(s.log)
	onUsage := func(us []fleet.KeyUsage) {
		warn(us)
		if s.cfg.OnKeyUsage != nil {
			s.cfg.OnKeyUsage(us)
		}
	}
	r := &fleet.Registry{DB: s.db, Dialect: s.dialect, Gate: gate, Ledger: s.ledger, OnUsage: onUsage}
	m, err := r.Join(ctx, s.kr, fleetHeartbeat, func(err error) { s.log.Warn("fleet heartbeat failed", "err", err) })
	if err != nil {
		return nil, err
	}
	for range 2 {
		if err := m.Beat(ctx); err != nil {
			s.log.Warn("fleet: advancing forms", "err", err)
		}
	}
	if w := gate.Wanted(); len(w) > 0 {
		s.log.Info("forms wait for older processes of the fleet", "forms", fmt.Sprint(w))
	}
	return m, nil
}

// usageWarner logs, at most once an hour per key, that a key has sealed
// enough values to be rotated out (fleet.KeyUsage.Due): the heartbeat
// hears the fleet's totals every few seconds.
func usageWarner(log *slog.Logger) func([]fleet.KeyUsage) {
	var mu sync.Mutex
	warned := map[keyring.KeyID]time.Time{}
	return func(us []fleet.KeyUsage) {
		mu.Lock()
		defer mu.Unlock()
		for _, u := range us {
			if w := u.Warning(); w != "" && time.Since(warned[u.Key]) > time.Hour {
				warned[u.Key] = time.Now()
				log.Warn("key due for rotation", "key", u.Key.String(), "seals", u.Seals, "warning", w)
			}
		}
	}
}
