package chat

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/wardlab/ward/field"
)

// Sign-up happens in two steps, so that it reveals nothing: POST
// /api/signup answers the same for a taken and a free address and creates
// no account; it writes an e-mail to the outbox, which for a free address
// holds a link that creates the account (POST /api/verify) and for a taken
// one says that someone tried. Until the link is followed, logging in with
// the password just given fails for both alike.
//
// The outbox is a table an operator reads (ward-chat outbox) in place of a
// mail server. Its recipients and bodies are sealed like every other
// value, bound to their row: a database reader sees neither the addresses
// nor the links, and a database writer cannot move a link to another
// message.

// signupTTL is how long a verification link stays valid.
const signupTTL = 24 * time.Hour

// OutboxMessage is one e-mail the service would send.
type OutboxMessage struct {
	ID      int64     `json:"id"`
	To      string    `json:"to"`
	Body    string    `json:"body"`
	Created time.Time `json:"created"`
}

const (
	msgCheckMail = "check your e-mail to finish signing up"
	msgVerified  = "the account exists: log in"
	msgBadLink   = "this link is invalid or has expired: sign up again"
)

// addOutbox writes an e-mail to the outbox.
func (s *store) addOutbox(ctx context.Context, tx *sql.Tx, to, body string) error {
	id := newID()
	rec, err := s.seal(s.cols.outboxTo, field.RowInt(id), to)
	if err != nil {
		return err
	}
	b, err := s.seal(s.cols.outboxBody, field.RowInt(id), body)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.q(`INSERT INTO outbox (id, recipient, body, created) VALUES (?, ?, ?, ?)`), id, rec, b, time.Now().UnixNano())
	return err
}

// outbox returns up to limit of the outbox's messages, oldest first.
func (s *store) outbox(ctx context.Context, limit int) ([]OutboxMessage, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, recipient, body, created FROM outbox ORDER BY created, id LIMIT ?`), limit)
	if err != nil {
		return nil, fmt.Errorf("chat: reading the outbox: %w", err)
	}
	defer rows.Close()
	var out []OutboxMessage
	for rows.Next() {
		var m OutboxMessage
		var to, body []byte
		var created int64
		if err := rows.Scan(&m.ID, &to, &body, &created); err != nil {
			return nil, err
		}
		if m.To, err = s.open(s.cols.outboxTo, field.RowInt(m.ID), to); err != nil {
			return nil, err
		}
		if m.Body, err = s.open(s.cols.outboxBody, field.RowInt(m.ID), body); err != nil {
			return nil, err
		}
		m.Created = time.Unix(0, created).UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// beginSignup records a pending sign-up (a free address) and its link, or
// tells the owner of a taken address that someone tried, in one
// transaction.
func (s *store) beginSignup(ctx context.Context, email, passwordHash, origin string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var taken int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM users WHERE `+byEmail), s.emailArgs(email)...).Scan(&taken); err != nil {
		return err
	}
	if taken > 0 {
		err = s.addOutbox(ctx, tx, email, "Someone asked to create an account with this address, which already has one. If it was you, log in; if not, nothing changes.")
	} else {
		var b [32]byte
		rand.Read(b[:])
		token := base64.RawURLEncoding.EncodeToString(b[:])
		th, exp := tokenHash(token), time.Now().Add(signupTTL).Unix()
		var enc any
		if enc, err = s.seal(s.cols.signupEmail, field.RowString(string(th)), email); err != nil {
			return err
		}
		var mac []byte
		if mac, err = s.cols.signupMAC.Sum(th, s.emailKey(email), passwordHash, exp); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO signups (token_hash, email, email_idx, password, mac, expires) VALUES (?, ?, ?, ?, ?, ?)`),
			th, enc, s.emailKey(email), passwordHash, mac, exp); err != nil {
			return err
		}
		err = s.addOutbox(ctx, tx, email, fmt.Sprintf("Follow this link within %v to create your account: %s/#verify=%s", signupTTL, origin, token))
	}
	if err != nil {
		return err
	}
	return tx.Commit()
}

var errBadLink = errors.New("chat: invalid or expired link")

// finishSignup creates the account of a pending sign-up whose row MAC
// matches (a row a database writer planted or altered is refused), once.
func (s *store) finishSignup(ctx context.Context, token string) error {
	th := tokenHash(token)
	var enc, idx, mac []byte
	var hash string
	var exp int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT email, email_idx, password, mac, expires FROM signups WHERE token_hash = ?`), th).Scan(&enc, &idx, &hash, &mac, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return errBadLink
	}
	if err != nil {
		return err
	}
	if err := s.cols.signupMAC.Verify(mac, th, idx, hash, exp); err != nil {
		return fmt.Errorf("%w: %w: %v", errBadLink, errTampered, err)
	}
	email, err := s.open(s.cols.signupEmail, field.RowString(string(th)), enc)
	if err != nil {
		return fmt.Errorf("%w: %v", errBadLink, err)
	}
	if res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM signups WHERE token_hash = ?`), th); err != nil {
		return err
	} else if n, _ := res.RowsAffected(); n != 1 {
		return errBadLink // followed twice at once: the other request won
	}
	if time.Now().Unix() > exp {
		return errBadLink
	}
	if _, err := s.createUser(ctx, email, hash); err != nil && !errors.Is(err, errExists) {
		return err
	}
	return nil
}

func (s *store) sweepSignups(ctx context.Context, now time.Time) error {
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM signups WHERE expires < ?`), now.Unix()); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM resets WHERE expires < ?`), now.Unix()); err != nil {
		return err
	}
	if _, err := s.subjects.PurgeSessions(ctx); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM outbox WHERE created < ?`), now.Add(-signupTTL).UnixNano())
	return err
}

// verify follows a sign-up link: POST /api/verify {"token": "…"}.
func (s *server) verify(w http.ResponseWriter, r *http.Request) {
	if !s.loginIP.allow(clientAddr(r, s.trusted)) {
		fail(w, http.StatusTooManyRequests, msgTooManyIPs)
		return
	}
	var v struct {
		Token string `json:"token"`
	}
	if !decode(w, r, &v) {
		return
	}
	if len(v.Token) != 43 {
		fail(w, http.StatusBadRequest, msgBadLink)
		return
	}
	err := s.store.finishSignup(r.Context(), v.Token)
	switch {
	case errors.Is(err, errTampered):
		s.log.Warn("sign-up row altered", "err", err)
		fail(w, http.StatusBadRequest, msgBadLink)
	case errors.Is(err, errBadLink):
		fail(w, http.StatusBadRequest, msgBadLink)
	case err != nil:
		s.log.Error("verification failed", "err", err)
		fail(w, http.StatusInternalServerError, "could not create the account")
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": msgVerified})
	}
}

// Outbox returns up to limit messages of the outbox, oldest first, for an
// operator (ward-chat outbox) standing in for a mail server.
func (s *Service) Outbox(ctx context.Context, limit int) ([]OutboxMessage, error) {
	return s.store.outbox(ctx, limit)
}
