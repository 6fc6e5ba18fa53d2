package chat

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/password"
)

// Limits of the API.
const (
	maxMessageBytes = 8 << 10
	maxTitleBytes   = 200
	maxBodyBytes    = 16 << 10
	contextMessages = 50
)

// server is the HTTP API.
type server struct {
	store     *store
	hasher    *password.Hasher
	assistant Assistant
	worker    *Worker // nil: the assistant runs in-process
	limits    Limits
	trusted   []netip.Prefix
	log       *slog.Logger
	attempts  *attempts
	loginIP   *buckets
	signupIP  *buckets
	signups   *rate.Limiter
	resetAddr *buckets      // per e-mail address (limitKey)
	resets    *rate.Limiter // all reset requests
	dummyHash string        // verified for unknown accounts, so the work does not reveal which exist
	origins   *origins
	devices   *devices
	recovery  bool // private mode offers a recovery code
	// limitSecret keys limitKey: this process's own, as its limits are.
	limitSecret []byte
}

// limitKey is what the limits count an address's attempts under: its
// normalised form (the users' blind index's normaliser, so look-alike
// spellings count as one account) under an HMAC keyed by this process's
// own secret. It does not change when the blind index is re-keyed to a
// new epoch — a guesser gets no fresh attempts at a rotation — and the
// process holds no address in the clear in its limiters.
func (s *server) limitKey(email string) string {
	m := hmac.New(sha256.New, s.limitSecret)
	m.Write([]byte(field.Fold.Func(email)))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

func newServer(st *store, h *password.Hasher, a Assistant, l Limits, trusted []netip.Prefix, origins *origins, devices *devices, log *slog.Logger, recovery bool) (*server, error) {
	dummy, _, err := h.HashWithKey(context.Background(), []byte("ward-chat dummy password"))
	if err != nil {
		return nil, err
	}
	return &server{store: st, hasher: h, assistant: a, limits: l, trusted: trusted, origins: origins, devices: devices, log: log, recovery: recovery,
		limitSecret: []byte(rand.Text()), // 128 random bits
		attempts:    newAttempts(l),
		loginIP:     newBuckets(l.LoginPerMinute, time.Minute, l.AddressEntries),
		signupIP:    newBuckets(l.SignupPerHour, time.Hour, l.AddressEntries),
		signups:     rate.NewLimiter(rate.Limit(float64(l.SignupsPerMinute)/60), l.SignupsPerMinute),
		resetAddr:   newBuckets(l.ResetsPerHour, time.Hour, l.AccountEntries),
		resets:      rate.NewLimiter(rate.Limit(float64(l.ResetsPerMinute)/60), l.ResetsPerMinute),
		dummyHash:   dummy}, nil
}

//go:embed web/index.html
var indexHTML []byte

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(indexHTML)
	})
	mux.HandleFunc("POST /api/signup", s.signup)
	mux.HandleFunc("POST /api/verify", s.verify)
	mux.HandleFunc("POST /api/login", s.login)
	mux.HandleFunc("POST /api/logout", s.logout)
	mux.HandleFunc("GET /api/conversations", s.auth(s.listConversations))
	mux.HandleFunc("POST /api/conversations", s.auth(s.createConversation))
	mux.HandleFunc("GET /api/conversations/{id}/messages", s.auth(s.listMessages))
	mux.HandleFunc("POST /api/conversations/{id}/messages", s.auth(s.sendMessage))
	mux.HandleFunc("GET /api/me", s.auth(s.me))
	mux.HandleFunc("GET /api/access", s.auth(s.listAccess))
	mux.HandleFunc("POST /api/private", s.auth(s.makePrivate))
	mux.HandleFunc("POST /api/password", s.auth(s.changePassword))
	mux.HandleFunc("POST /api/account/delete", s.auth(s.deleteAccount))
	mux.HandleFunc("POST /api/reset", s.requestReset)
	mux.HandleFunc("POST /api/reset/confirm", s.confirmReset)
	return secure(mux, s.origins)
}

type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg string) { writeJSON(w, code, apiError{Error: msg}) }

// failCode answers with an error a client can act on by its code.
func failCode(w http.ResponseWriter, code int, msg, errCode string) {
	writeJSON(w, code, apiError{Error: msg, Code: errCode})
}

// decode reads a bounded JSON body into v.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			fail(w, http.StatusRequestEntityTooLarge, "request too large")
		} else {
			fail(w, http.StatusBadRequest, "malformed JSON")
		}
		return false
	}
	return true
}

type credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// loginRequest is a log-in: credentials and whether the page last saw
// the account in private mode (kept in the browser, not by the service),
// so that the answer says when the mode changed without the user.
type loginRequest struct {
	credentials
	PrivateSeen *bool `json:"private_seen,omitempty"`
}

// msgPrivateOff is the notice a log-in answers when the page last saw the
// account private and it no longer is: only the operator, with every key,
// can do that (SECURITY.md §7), and the user must hear of it.
const msgPrivateOff = "private mode was turned off for this account since you last used it: what you write now can be read with the service's keys. Turn it on again under Account, and ask the service why."

// modeNotice is the notice for a user whose mode differs from the one
// their page last saw ("" when it does not, or the page saw none).
func modeNotice(seen *bool, private bool) string {
	if seen != nil && *seen && !private {
		return msgPrivateOff
	}
	return ""
}

func (c credentials) valid() bool {
	return strings.Contains(c.Email, "@") && len(c.Email) <= 254 && utf8.ValidString(c.Email)
}

// Answers that must not tell accounts apart.
const (
	msgBusy        = "busy, try again"
	msgBadLogin    = "wrong e-mail or password"
	msgTooMany     = "too many attempts, wait a minute"
	msgTooManyIPs  = "too many requests from this address, wait"
	msgTooManyNet  = "too many sign-ups from this network, wait"
	msgSignupsFull = "the service is taking too many sign-ups right now, try again in a minute"
	msgResetsAddr  = "too many reset requests for this address, wait an hour"
	msgResetsFull  = "the service is taking too many reset requests right now, try again in a minute"
)

// signup starts a sign-up (see signup.go). Whether the address already
// had an account is not revealed: the answer is the same, the password is
// hashed either way, an e-mail goes to the outbox either way, and no
// account exists until the link in it is followed.
func (s *server) signup(w http.ResponseWriter, r *http.Request) {
	// The per-network budget is checked first, so that one network cannot
	// spend the global budget on its own; the global one's refusal says
	// it is the service's, not the client's.
	if !s.signupIP.allow(clientPrefix(r, s.trusted)) {
		fail(w, http.StatusTooManyRequests, msgTooManyNet)
		return
	}
	if !s.signups.Allow() {
		fail(w, http.StatusTooManyRequests, msgSignupsFull)
		return
	}
	var c credentials
	if !decode(w, r, &c) {
		return
	}
	if !c.valid() {
		fail(w, http.StatusBadRequest, "a valid e-mail address is required")
		return
	}
	if len(c.Password) < 8 {
		fail(w, http.StatusBadRequest, "the password must have at least 8 characters")
		return
	}
	// A key-bearing hash: the log-in that verifies it also yields the
	// secret that unlocks a private user's key, in the same Argon2 call.
	hash, _, err := s.hasher.HashWithKey(r.Context(), []byte(c.Password))
	if errors.Is(err, password.ErrBusy) {
		fail(w, http.StatusServiceUnavailable, msgBusy)
		return
	}
	if err != nil {
		fail(w, http.StatusBadRequest, "password not accepted")
		return
	}
	if err := s.store.beginSignup(r.Context(), c.Email, hash, s.origins.linkBase(r)); err != nil {
		s.log.Error("sign-up failed", "err", err)
		fail(w, http.StatusInternalServerError, "could not sign up")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": msgCheckMail})
}

// login checks the password. Known and unknown accounts take the same
// path: the same limits, one hash through the same limiter, the same
// answers (401, or 503 when busy).
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if !s.loginIP.allow(clientAddr(r, s.trusted)) {
		fail(w, http.StatusTooManyRequests, msgTooManyIPs)
		return
	}
	var in loginRequest
	if !decode(w, r, &in) {
		return
	}
	c := in.credentials
	// Device tokens are signed over the normalised address (the HMAC is
	// keyed: the cookie names no address), which a re-key of its blind
	// index leaves as it is.
	account := field.Fold.Func(c.Email)
	key := s.attemptKey(r, account, s.limitKey(c.Email))
	if !s.attempts.reserve(key, time.Now()) {
		fail(w, http.StatusTooManyRequests, msgTooMany)
		return
	}
	id, secret, ok, err := s.checkPassword(r.Context(), c)
	defer clear(secret)
	s.attempts.settle(key, ok, time.Now())
	switch {
	case errors.Is(err, password.ErrBusy), errors.Is(err, context.DeadlineExceeded):
		fail(w, http.StatusServiceUnavailable, msgBusy)
	case !ok:
		fail(w, http.StatusUnauthorized, msgBadLogin)
	default:
		if old, ok := s.origins.session(r); ok { // a new session: no fixation
			s.store.deleteSession(r.Context(), old)
		}
		s.devices.issue(w, account)
		s.startSession(w, r, id, secret, in.PrivateSeen)
	}
}

// checkPassword verifies c with one Argon2 call, and returns the secret
// the key-bearing hash yields (the key of a private user's data). A hash
// that is not key-bearing is replaced by one (a second call, once per
// user); a hash under older parameters or pepper is replaced too, and a
// private user's keys are re-wrapped from the old secret to the new in
// the same transaction. An unknown account, or one whose hash row was
// altered, verifies against a dummy hash instead.
func (s *server) checkPassword(ctx context.Context, c credentials) (int64, []byte, bool, error) {
	id, stored, err := s.store.userByEmail(ctx, c.Email)
	if err != nil {
		if errors.Is(err, errTampered) {
			s.log.Warn("password hash row altered", "err", err)
		}
		secret, _, err := s.hasher.VerifyWithKey(ctx, []byte(c.Password), s.dummyHash)
		clear(secret)
		if errors.Is(err, password.ErrMismatch) {
			err = nil
		}
		return 0, nil, false, err
	}
	secret, res, err := s.hasher.VerifyWithKey(ctx, []byte(c.Password), stored)
	switch {
	case errors.Is(err, password.ErrNotKeyBearing): // matched: an older hash
		newHash, newSecret, herr := s.hasher.HashWithKey(ctx, []byte(c.Password))
		if herr != nil {
			s.log.Error("password upgrade failed", "user", id, "err", herr)
			return id, nil, true, nil
		}
		if err := s.store.updatePassword(ctx, id, stored, newHash); err != nil {
			s.log.Error("password upgrade failed", "user", id, "err", err)
			clear(newSecret)
			return id, nil, true, nil
		}
		return id, newSecret, true, nil
	case errors.Is(err, password.ErrMismatch):
		return 0, nil, false, nil
	case err != nil:
		return 0, nil, false, err
	}
	if res.NeedsRehash {
		newHash, newSecret, herr := s.hasher.HashWithKey(ctx, []byte(c.Password))
		if herr == nil {
			herr = s.store.replacePassword(ctx, id, stored, newHash, secret, newSecret)
		}
		if herr != nil {
			s.log.Error("password upgrade failed", "user", id, "err", herr)
			clear(newSecret)
			return id, secret, true, nil
		}
		clear(secret)
		secret = newSecret
	}
	return id, secret, true, nil
}

// startSession starts a session and answers the log-in with the account's
// mode, and a notice if it is not the mode the page last saw.
func (s *server) startSession(w http.ResponseWriter, r *http.Request, user int64, secret []byte, seen *bool) {
	var b [32]byte
	rand.Read(b[:])
	token := base64.RawURLEncoding.EncodeToString(b[:])
	if err := s.store.createSession(r.Context(), token, user, s.limits.SessionTTL); err != nil {
		fail(w, http.StatusInternalServerError, "could not start a session")
		return
	}
	if secret != nil {
		if err := s.unlockSession(r.Context(), user, secret, token); err != nil {
			s.log.Error("could not unlock a private user's key", "user", user, "err", err)
		}
	}
	s.origins.setSession(w, token, int(s.limits.SessionTTL.Seconds()))
	private, err := s.store.subjects.Private(r.Context(), subjectOf(user))
	if err != nil {
		s.log.Error("reading whether an account is private", "user", user, "err", err)
	}
	out := map[string]any{"status": "ok", "private": private}
	if n := modeNotice(seen, private); n != "" {
		out["notice"] = n
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) logout(w http.ResponseWriter, r *http.Request) {
	if token, ok := s.origins.session(r); ok {
		s.store.deleteSession(r.Context(), token)
		s.store.subjects.EndSession(r.Context(), []byte(token))
	}
	s.origins.setSession(w, "", -1)
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *server) auth(next func(http.ResponseWriter, *http.Request, int64)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := s.origins.session(r)
		if !ok {
			fail(w, http.StatusUnauthorized, "log in first")
			return
		}
		user, err := s.store.sessionUser(r.Context(), token)
		if errors.Is(err, errTampered) {
			s.log.Warn("session row altered")
		}
		if err != nil {
			fail(w, http.StatusUnauthorized, "log in first")
			return
		}
		// A private user's key, restored from this session; without it
		// (a session from before private mode, or one whose copy
		// expired) their values stay closed and say so.
		keys, err := s.store.subjects.Session(r.Context(), subjectOf(user), []byte(token))
		switch {
		case errors.Is(err, field.ErrSubjectErased):
			fail(w, http.StatusUnauthorized, "this account was deleted")
			return
		case errors.Is(err, subject.ErrNoSession):
			keys = nil
		case err != nil:
			s.log.Error("reading a session's keys", "user", user, "err", err)
			fail(w, http.StatusInternalServerError, "could not read the session")
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), requestKeys{}, &requestState{keys: keys, token: token}))
		next(w, r, user)
		if keys != nil {
			keys.Destroy()
		}
	}
}

type requestKeys struct{}

// requestState is what auth learned about a request's session.
type requestState struct {
	keys  *subject.Unlocked // nil: a private user's values stay closed
	token string
}

func state(r *http.Request) *requestState {
	if st, ok := r.Context().Value(requestKeys{}).(*requestState); ok {
		return st
	}
	return &requestState{}
}

// storeFor is the store as the request's session sees it.
func (s *server) storeFor(r *http.Request) *store { return s.store.with(state(r).keys) }

func (s *server) listConversations(w http.ResponseWriter, r *http.Request, user int64) {
	cs, err := s.storeFor(r).conversations(r.Context(), user)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not load conversations")
		return
	}
	if cs == nil {
		cs = []Conversation{}
	}
	writeJSON(w, http.StatusOK, cs)
}

func (s *server) createConversation(w http.ResponseWriter, r *http.Request, user int64) {
	var in struct {
		Title string `json:"title"`
	}
	if !decode(w, r, &in) {
		return
	}
	if in.Title == "" || len(in.Title) > maxTitleBytes || !utf8.ValidString(in.Title) {
		fail(w, http.StatusBadRequest, fmt.Sprintf("a title of at most %d bytes is required", maxTitleBytes))
		return
	}
	c, err := s.storeFor(r).createConversation(r.Context(), user, in.Title)
	if errors.Is(err, field.ErrSubjectLocked) {
		failCode(w, http.StatusForbidden, msgLocked, codeLocked)
		return
	}
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not create the conversation")
		return
	}
	writeJSON(w, http.StatusCreated, c)
}

// conversation resolves {id} for the user; another user's conversation and
// a missing one get the same 404 after the same query.
func (s *server) conversation(w http.ResponseWriter, r *http.Request, user int64) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || s.store.owns(r.Context(), user, id) != nil {
		fail(w, http.StatusNotFound, "no such conversation")
		return 0, false
	}
	return id, true
}

func (s *server) listMessages(w http.ResponseWriter, r *http.Request, user int64) {
	conv, ok := s.conversation(w, r, user)
	if !ok {
		return
	}
	ms, err := s.storeFor(r).messages(r.Context(), user, conv, contextMessages)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not load messages")
		return
	}
	if ms == nil {
		ms = []Message{}
	}
	writeJSON(w, http.StatusOK, ms)
}

// answer is the assistant's reply to a conversation: from the worker
// process when there is one and the user is not private, else in-process.
// On false it has written the error response.
func (s *server) answer(w http.ResponseWriter, r *http.Request, st *store, user, conv int64) (string, bool) {
	text, used, err := s.viaWorker(r.Context(), st, user, conv)
	if errors.Is(err, ErrAccessLog) {
		s.log.Error("access log", "err", err)
		fail(w, http.StatusServiceUnavailable, msgAccessLog)
		return "", false
	}
	if err != nil {
		s.log.Warn("assistant worker failed", "err", err)
		fail(w, http.StatusBadGateway, "the assistant failed")
		return "", false
	}
	if used {
		return text, true
	}
	// The assistant reads the decrypted context through the same API a
	// real model would get — and only while the user's session holds
	// their key: for a private user without it, it gets a typed error,
	// never plaintext, and says so. The reading is in the user's access
	// log first.
	if !s.recordAccess(r.Context(), w, user, ReaderAssistant, conv) {
		return "", false
	}
	history, err := st.messages(r.Context(), user, conv, contextMessages)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not load the context")
		return "", false
	}
	for _, m := range history {
		if m.Error == messageLockedError {
			failCode(w, http.StatusForbidden, "the assistant cannot read this conversation: "+msgLocked, codeLocked)
			return "", false
		}
	}
	text, err = s.assistant.Reply(r.Context(), history)
	if err != nil {
		fail(w, http.StatusBadGateway, "the assistant failed")
		return "", false
	}
	return text, true
}

// viaWorker answers through the worker process: never for a private user
// (whose messages leave the service only inside their session), nor for a
// conversation holding a value a subject grant cannot open (v3, before
// the fleet opened v4).
func (s *server) viaWorker(ctx context.Context, st *store, user, conv int64) (string, bool, error) {
	if s.worker == nil {
		return "", false, nil
	}
	private, err := s.store.subjects.Private(ctx, subjectOf(user))
	if err != nil || private {
		return "", false, err
	}
	req, ok, err := st.workerHistory(ctx, user, conv, contextMessages)
	if err != nil || !ok {
		if err == nil {
			s.log.Info("assistant in-process: the conversation holds values a subject grant cannot open (ciphertext v3)")
		}
		return "", false, err
	}
	defer req.Grant.Destroy()
	if err := s.store.access.record(ctx, user, ReaderAssistantWorker, conv, len(req.Messages)); err != nil {
		return "", false, err
	}
	text, err := s.worker.ask(ctx, req)
	return text, true, err
}

func (s *server) sendMessage(w http.ResponseWriter, r *http.Request, user int64) {
	conv, ok := s.conversation(w, r, user)
	if !ok {
		return
	}
	var in struct {
		Body string `json:"body"`
	}
	if !decode(w, r, &in) {
		return
	}
	if in.Body == "" || len(in.Body) > maxMessageBytes || !utf8.ValidString(in.Body) {
		fail(w, http.StatusBadRequest, fmt.Sprintf("a message of 1 to %d bytes of UTF-8 is required", maxMessageBytes))
		return
	}
	st := s.storeFor(r)
	mine, err := st.addMessage(r.Context(), user, conv, "user", in.Body)
	if errors.Is(err, field.ErrSubjectLocked) {
		failCode(w, http.StatusForbidden, msgLocked, codeLocked)
		return
	}
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not store the message")
		return
	}
	text, ok := s.answer(w, r, st, user, conv)
	if !ok {
		return
	}
	reply, err := st.addMessage(r.Context(), user, conv, "assistant", text)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not store the reply")
		return
	}
	writeJSON(w, http.StatusCreated, []Message{mine, reply})
}
