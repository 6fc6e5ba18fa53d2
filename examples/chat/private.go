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
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/password"
)

// Keys per user. Every user's titles and messages are sealed under the
// user's own key (field/subject, namespace "users"), which the keyring
// wraps:
//
//   - Deleting an account forgets that key: every title and message of the
//     user stops opening at once here and within the key cache's TTL in
//     every other process; the rows are deleted afterwards by the sweep.
//   - Private mode (POST /api/private) re-wraps the key under a key
//     derived from the user's password, in the Argon2 call that verifies
//     their log-in: the database, the keyring file and the master key then
//     open none of the user's titles and messages while the user is logged
//     out. A log-in stores the key sealed under a key split between the
//     session's token and the keyring, so any process serves the session;
//     logging out or the session's end closes it again. The assistant reads
//     a private user's conversation only inside such a session.
//   - A password change re-wraps the key; a reset through the e-mailed
//     link keeps the data only with the recovery code the user was shown
//     when they turned private mode on (if the service offers one), and
//     the service says so before a reset that would lose it.
//
// E-mail addresses stay under keyring keys: the service needs them to let
// the user log in and to write to them.

const (
	msgLocked  = "your key is not in this session: log in again"
	codeLocked = "locked"
	// codeDataLoss asks the client to confirm a reset that loses a private
	// user's earlier messages.
	codeDataLoss = "private_data_loss"
	// codeNoRecovery refuses a recovery code the service does not offer.
	codeNoRecovery = "recovery_not_offered"
	resetTTL       = time.Hour
)

// unlockSession restores a private user's key from their log-in's secret
// into the new session, and seals what the user still has under keyring
// keys under it (values from before private mode that a job skipped).
func (s *server) unlockSession(ctx context.Context, user int64, secret []byte, token string) error {
	u, err := s.store.subjects.Unlock(ctx, subjectOf(user), secret)
	if err != nil {
		return err
	}
	defer u.Destroy()
	if err := s.store.subjects.StartSession(ctx, u, []byte(token), time.Now().Add(s.limits.SessionTTL)); err != nil {
		return err
	}
	if !u.Private() {
		return nil
	}
	n, err := s.store.with(u).sealRemaining(ctx, user)
	if n > 0 {
		s.log.Info("sealed a private user's remaining values under their key", "user", user, "values", n)
	}
	return err
}

// sealRemaining re-seals a user's titles and messages still under keyring
// keys under the user's own key (the store's columns carry it), each by
// compare-and-swap on the value read.
func (s *store) sealRemaining(ctx context.Context, user int64) (int, error) {
	n := 0
	type row struct {
		id        int64
		conv      int64
		role      string
		raw       []byte
		isTitle   bool
		col       *field.Column
		tbl, name string
	}
	var todo []row
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, title FROM conversations WHERE user_id = ?`), user)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		r := row{isTitle: true, col: s.cols.title, tbl: "conversations", name: "title"}
		if err := rows.Scan(&r.id, &r.raw); err != nil {
			rows.Close()
			return 0, err
		}
		todo = append(todo, r)
	}
	rows.Close()
	rows, err = s.db.QueryContext(ctx, s.q(`SELECT id, conversation_id, role, body FROM messages WHERE user_id = ?`), user)
	if err != nil {
		return 0, err
	}
	for rows.Next() {
		r := row{col: s.cols.body, tbl: "messages", name: "body"}
		if err := rows.Scan(&r.id, &r.conv, &r.role, &r.raw); err != nil {
			rows.Close()
			return 0, err
		}
		todo = append(todo, r)
	}
	rows.Close()
	for _, r := range todo {
		if r.raw == nil {
			continue
		}
		if ct, err := field.ParseCiphertext(r.raw); err == nil {
			if _, subjectSealed := ct.SubjectKeyVersion(); subjectSealed {
				continue
			}
		}
		rk := field.RowInt(r.id).With(user)
		if !r.isTitle {
			rk = field.RowInt(r.id).With(r.conv, user, r.role)
		}
		pt, err := s.open(r.col, rk, r.raw)
		if err != nil {
			continue // left as it is: shown as an integrity error
		}
		enc, err := s.seal(r.col, rk, pt)
		if err != nil {
			return n, err
		}
		res, err := s.db.ExecContext(ctx, s.q(fmt.Sprintf(`UPDATE %s SET %s = ? WHERE id = ? AND %s = ?`, r.tbl, r.name, r.name)), enc, r.id, r.raw)
		if err != nil {
			return n, err
		}
		if k, _ := res.RowsAffected(); k == 1 {
			n++
		}
	}
	return n, nil
}

// replacePassword stores a new hash by compare-and-swap and re-wraps a
// private user's keys from the old secret to the new, in one transaction.
func (s *store) replacePassword(ctx context.Context, id int64, old, new string, oldSecret, newSecret []byte) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.setPasswordTx(ctx, tx, id, old, new); err != nil {
		return err
	}
	if err := s.subjects.ChangeSecret(ctx, tx, subjectOf(id), oldSecret, newSecret); err != nil {
		return err
	}
	return tx.Commit()
}

var errPasswordChanged = errors.New("chat: the password changed meanwhile")

// setPasswordTx replaces a hash (with its row MAC) if it is still old.
func (s *store) setPasswordTx(ctx context.Context, tx *sql.Tx, id int64, old, new string) error {
	mac, err := s.cols.passwordMAC.Sum(id, new)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, s.q(`UPDATE users SET password = ?, password_mac = ? WHERE id = ? AND password = ?`), new, mac, id, old)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return errPasswordChanged
	}
	return nil
}

// passwordOf returns a user's verified hash.
func (s *store) passwordOf(ctx context.Context, id int64) (string, error) {
	var hash string
	var mac []byte
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT password, password_mac FROM users WHERE id = ?`), id).Scan(&hash, &mac); err != nil {
		return "", err
	}
	if err := s.cols.passwordMAC.Verify(mac, id, hash); err != nil {
		return "", fmt.Errorf("%w: %v", errTampered, err)
	}
	return hash, nil
}

// verifyUser checks the password of a logged-in user and returns its
// secret (nil for a hash that is not key-bearing).
func (s *server) verifyUser(ctx context.Context, user int64, pw string) (string, []byte, error) {
	hash, err := s.store.passwordOf(ctx, user)
	if err != nil {
		return "", nil, err
	}
	secret, _, err := s.hasher.VerifyWithKey(ctx, []byte(pw), hash)
	if errors.Is(err, password.ErrNotKeyBearing) {
		err = nil
	}
	return hash, secret, err
}

// failPassword answers a failed password check.
func (s *server) failPassword(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, password.ErrMismatch):
		fail(w, http.StatusForbidden, "wrong password")
	case errors.Is(err, password.ErrBusy):
		fail(w, http.StatusServiceUnavailable, msgBusy)
	default:
		s.log.Error("password check failed", "err", err)
		fail(w, http.StatusInternalServerError, "could not check the password")
	}
}

// me answers GET /api/me: whether the account is private, and whether its
// key is in this session.
func (s *server) me(w http.ResponseWriter, r *http.Request, user int64) {
	private, err := s.store.subjects.Private(r.Context(), subjectOf(user))
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not read the account")
		return
	}
	recovery, _ := s.store.subjects.HasRecovery(r.Context(), subjectOf(user))
	out := map[string]any{"private": private, "unlocked": !private || state(r).keys != nil, "recovery": recovery, "recovery_offered": s.recovery}
	if private {
		// Values still under keyring keys (from before private mode): the
		// next log-in seals them under the user's key.
		n, err := s.store.pending(r.Context(), user)
		if err != nil {
			s.log.Error("counting a private user's pending values", "user", user, "err", err)
		}
		out["pending"] = n
	}
	writeJSON(w, http.StatusOK, out)
}

// pending counts a user's titles and messages not yet under their own key
// (a census of their rows: reseal.Job with Subject).
func (s *store) pending(ctx context.Context, user int64) (int, error) {
	n := 0
	for _, c := range []*field.Column{s.cols.title, s.cols.body} {
		census, err := (&reseal.Job{DB: s.db, Dialect: s.dialect, Column: c, Key: "id", Subject: subjectOf(user)}).Count(ctx)
		if err != nil {
			return n, err
		}
		n += census.Rows - census.Null - census.SubjectSealed // under keyring keys (or plaintext)
	}
	return n, nil
}

// makePrivate turns private mode on: POST /api/private {"password": "…",
// "recovery": true}. The password is checked (one Argon2 call, whose
// secret becomes the key's wrapping); the answer carries the recovery
// code, once, if the service offers one and the user asked.
func (s *server) makePrivate(w http.ResponseWriter, r *http.Request, user int64) {
	var in struct {
		Password string `json:"password"`
		Recovery bool   `json:"recovery"`
	}
	if !decode(w, r, &in) {
		return
	}
	if in.Recovery && !s.recovery {
		// Asked for a code the service does not give: turning private mode
		// on without one would lose every message at a forgotten password.
		failCode(w, http.StatusConflict, "this service offers no recovery code: with private mode on, a forgotten password makes your titles and messages unreadable, for good. Turn it on without a recovery code if you accept that.", codeNoRecovery)
		return
	}
	_, secret, err := s.verifyUser(r.Context(), user, in.Password)
	defer clear(secret)
	if err != nil {
		s.failPassword(w, err)
		return
	}
	if secret == nil {
		fail(w, http.StatusConflict, "log out and in again first: your password hash is from before private mode")
		return
	}
	u, code, err := s.store.subjects.MakePrivate(r.Context(), subjectOf(user), secret, subject.PrivateOptions{Recovery: s.recovery && in.Recovery})
	if err != nil {
		s.log.Error("private mode failed", "user", user, "err", err)
		fail(w, http.StatusInternalServerError, "could not turn private mode on")
		return
	}
	defer u.Destroy()
	if err := s.store.subjects.StartSession(r.Context(), u, []byte(state(r).token), time.Now().Add(s.limits.SessionTTL)); err != nil {
		s.log.Error("private mode: session", "user", user, "err", err)
	}
	if _, err := s.store.with(u).sealRemaining(r.Context(), user); err != nil {
		s.log.Error("private mode: sealing remaining values", "user", user, "err", err)
	}
	out := map[string]string{"status": "private"}
	if code != "" {
		out["recovery_code"] = code
	}
	writeJSON(w, http.StatusOK, out)
}

// changePassword answers POST /api/password {"old": "…", "new": "…"}: the
// new hash and a private user's re-wrapped key in one transaction.
func (s *server) changePassword(w http.ResponseWriter, r *http.Request, user int64) {
	var in struct {
		Old string `json:"old"`
		New string `json:"new"`
	}
	if !decode(w, r, &in) {
		return
	}
	if len(in.New) < 8 {
		fail(w, http.StatusBadRequest, "the password must have at least 8 characters")
		return
	}
	hash, secret, err := s.verifyUser(r.Context(), user, in.Old)
	defer clear(secret)
	if err != nil {
		s.failPassword(w, err)
		return
	}
	newHash, newSecret, err := s.hasher.HashWithKey(r.Context(), []byte(in.New))
	defer clear(newSecret)
	if err != nil {
		s.failPassword(w, err)
		return
	}
	if secret == nil {
		err = s.store.updatePassword(r.Context(), user, hash, newHash)
	} else {
		err = s.store.replacePassword(r.Context(), user, hash, newHash, secret, newSecret)
	}
	if err != nil {
		s.log.Error("password change failed", "user", user, "err", err)
		fail(w, http.StatusConflict, "could not change the password: try again")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "changed"})
}

// deleteAccount answers POST /api/account/delete {"password": "…"}: the
// user's key is forgotten (an authenticated tombstone, counted in the
// ledger) and the account and its sessions are deleted, in one
// transaction; titles and messages no longer open anywhere and are
// deleted by the sweep.
func (s *server) deleteAccount(w http.ResponseWriter, r *http.Request, user int64) {
	var in struct {
		Password string `json:"password"`
	}
	if !decode(w, r, &in) {
		return
	}
	_, secret, err := s.verifyUser(r.Context(), user, in.Password)
	clear(secret)
	if err != nil {
		s.failPassword(w, err)
		return
	}
	if err := s.store.deleteAccount(r.Context(), user); err != nil {
		s.log.Error("deleting an account failed", "user", user, "err", err)
		fail(w, http.StatusInternalServerError, "could not delete the account")
		return
	}
	s.origins.setSession(w, "", -1)
	writeJSON(w, http.StatusOK, map[string]string{"status": "deleted"})
}

// deleteAccount forgets the user and deletes the account, its sessions
// and reset links in one transaction: a crash leaves either everything
// or nothing done (no account whose key is gone, no deleted account whose
// key stays); the sweep deletes its conversations and messages, which no
// longer open. On MySQL a deadlock, or on Galera a lost certification
// (error 1213), rolled the whole transaction back: it runs again.
func (s *store) deleteAccount(ctx context.Context, user int64) error {
	for attempt := 1; ; attempt++ {
		err := s.deleteAccountOnce(ctx, user)
		if !field.Retryable(err) || attempt == 8 {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
		}
	}
}

func (s *store) deleteAccountOnce(ctx context.Context, user int64) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	_, done, err := s.subjects.ForgetIn(ctx, tx, subjectOf(user))
	if err != nil {
		return err
	}
	for _, q := range []string{`DELETE FROM sessions WHERE user_id = ?`, `DELETE FROM resets WHERE user_id = ?`, `DELETE FROM users WHERE id = ?`} {
		if _, err := tx.ExecContext(ctx, s.q(q), user); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return done(ctx)
}

// sweepForgotten deletes the rows of up to limit users whose keys were
// forgotten, per table: conversations and messages, and an account row
// with its sessions and reset links should one remain (an account deleted
// by an earlier release that crashed between the forget and the
// deletion). A user counts as forgotten only on a tombstone that
// verifies: a row a database writer planted in the tombstones table
// deletes nobody's history.
func (s *store) sweepForgotten(ctx context.Context, limit int) (int64, error) {
	var total int64
	for _, tc := range [][2]string{{"messages", "user_id"}, {"conversations", "user_id"}, {"sessions", "user_id"}, {"resets", "user_id"}, {"users", "id"}} {
		t, c := tc[0], tc[1]
		rows, err := s.db.QueryContext(ctx, s.q(fmt.Sprintf(`SELECT DISTINCT CAST(%[1]s AS %[4]s) FROM %[2]s WHERE CAST(%[1]s AS %[4]s) IN
			(SELECT subject FROM %[3]s WHERE namespace = ?) LIMIT ?`, c, t, subject.DefaultTombstonesTable, s.asText())), subjectNamespace, limit)
		if err != nil {
			return total, err
		}
		var users []string
		for rows.Next() {
			var u string
			if err := rows.Scan(&u); err != nil {
				rows.Close()
				return total, err
			}
			users = append(users, u)
		}
		rows.Close()
		for _, u := range users {
			if ok, err := s.subjects.IsForgotten(ctx, u); err != nil || !ok {
				continue // no tombstone that verifies: nothing to delete (Audit reports the bad one)
			}
			res, err := s.db.ExecContext(ctx, s.q(fmt.Sprintf(`DELETE FROM %s WHERE CAST(%s AS %s) = ?`, t, c, s.asText())), u)
			if err != nil {
				return total, err
			}
			n, _ := res.RowsAffected()
			total += n
		}
	}
	return total, nil
}

// Password reset through the outbox: POST /api/reset {"email": "…"}
// answers the same whether or not the account exists and mails a link to
// an existing one; POST /api/reset/confirm {"token", "password",
// "recovery_code", "accept_loss"} sets the new password. For a private
// account without a recovery code it refuses with code private_data_loss
// until the client confirms (accept_loss), because the user's earlier
// titles and messages would then never open again.

func (s *server) requestReset(w http.ResponseWriter, r *http.Request) {
	if !s.signupIP.allow(clientPrefix(r, s.trusted)) {
		fail(w, http.StatusTooManyRequests, msgTooManyNet)
		return
	}
	var in struct {
		Email string `json:"email"`
	}
	if !decode(w, r, &in) {
		return
	}
	if !(credentials{Email: in.Email}).valid() {
		fail(w, http.StatusBadRequest, "a valid e-mail address is required")
		return
	}
	// Per address, whether or not it has an account (the answer reveals
	// nothing), then for the whole service.
	if !s.resetAddr.allow(s.limitKey(in.Email)) {
		fail(w, http.StatusTooManyRequests, msgResetsAddr)
		return
	}
	if !s.resets.Allow() {
		fail(w, http.StatusTooManyRequests, msgResetsFull)
		return
	}
	if err := s.store.beginReset(r.Context(), in.Email, s.origins.linkBase(r)); err != nil {
		s.log.Error("reset request failed", "err", err)
		fail(w, http.StatusInternalServerError, "could not start the reset")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "if the address has an account, a link to reset its password is on its way"})
}

// beginReset mails a reset link to an existing account (nothing for an
// unknown address, with the same answer).
func (s *store) beginReset(ctx context.Context, email, origin string) error {
	var id int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT id FROM users WHERE `+byEmail), s.emailArgs(email)...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	var b [32]byte
	rand.Read(b[:])
	token := base64.RawURLEncoding.EncodeToString(b[:])
	th, exp := tokenHash(token), time.Now().Add(resetTTL).Unix()
	mac, err := s.cols.resetMAC.Sum(th, id, exp)
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO resets (token_hash, user_id, expires, mac) VALUES (?, ?, ?, ?)`), th, id, exp, mac); err != nil {
		return err
	}
	if err := s.addOutbox(ctx, tx, email, fmt.Sprintf("Follow this link within %v to choose a new password: %s/#reset=%s", resetTTL, origin, token)); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *server) confirmReset(w http.ResponseWriter, r *http.Request) {
	if !s.loginIP.allow(clientAddr(r, s.trusted)) {
		fail(w, http.StatusTooManyRequests, msgTooManyIPs)
		return
	}
	var in struct {
		Token        string `json:"token"`
		Password     string `json:"password"`
		RecoveryCode string `json:"recovery_code"`
		AcceptLoss   bool   `json:"accept_loss"`
	}
	if !decode(w, r, &in) {
		return
	}
	if len(in.Password) < 8 {
		fail(w, http.StatusBadRequest, "the password must have at least 8 characters")
		return
	}
	ctx := r.Context()
	th := tokenHash(in.Token)
	var user, exp int64
	var mac []byte
	err := s.store.db.QueryRowContext(ctx, s.store.q(`SELECT user_id, expires, mac FROM resets WHERE token_hash = ?`), th).Scan(&user, &exp, &mac)
	if err != nil || time.Now().Unix() > exp || s.store.cols.resetMAC.Verify(mac, th, user, exp) != nil {
		fail(w, http.StatusBadRequest, "this link is invalid or has expired: ask for another")
		return
	}
	private, err := s.store.subjects.Private(ctx, subjectOf(user))
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not read the account")
		return
	}
	if private && in.RecoveryCode == "" && !in.AcceptLoss {
		failCode(w, http.StatusConflict, "this account is private: its messages are sealed under a key only your password opens. Without your recovery code, a new password makes every earlier title and message unreadable, for good. Give the recovery code, or confirm the loss.", codeDataLoss)
		return
	}
	hash, err := s.store.passwordOf(ctx, user)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not read the account")
		return
	}
	newHash, newSecret, err := s.hasher.HashWithKey(ctx, []byte(in.Password))
	defer clear(newSecret)
	if err != nil {
		s.failPassword(w, err)
		return
	}
	lost, err := s.store.resetPassword(ctx, user, th, hash, newHash, private, in.RecoveryCode, newSecret)
	switch {
	case errors.Is(err, subject.ErrWrongSecret):
		fail(w, http.StatusForbidden, "the recovery code is wrong")
		return
	case err != nil:
		s.log.Error("reset failed", "user", user, "err", err)
		fail(w, http.StatusConflict, "could not reset the password: try again")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "reset: log in", "lost_keys": lost})
}

// resetPassword sets a new hash, uses up the link, ends every session
// and, for a private user, re-wraps (recovery code) or replaces (loss) the
// key, in one transaction.
func (s *store) resetPassword(ctx context.Context, user int64, th []byte, old, new string, private bool, code string, newSecret []byte) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if res, err := tx.ExecContext(ctx, s.q(`DELETE FROM resets WHERE token_hash = ?`), th); err != nil {
		return 0, err
	} else if n, _ := res.RowsAffected(); n != 1 {
		return 0, errBadLink
	}
	if err := s.setPasswordTx(ctx, tx, user, old, new); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE user_id = ?`), user); err != nil {
		return 0, err
	}
	lost := 0
	if private {
		if lost, err = s.subjects.Reset(ctx, tx, subjectOf(user), code, newSecret); err != nil {
			return 0, err
		}
	}
	return lost, tx.Commit()
}
