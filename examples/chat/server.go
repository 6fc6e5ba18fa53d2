package chat

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/wardlab/ward/password"
)

// Assistant writes the AI partner's reply from the decrypted context. A
// real model endpoint implements the same interface.
type Assistant interface {
	Reply(ctx context.Context, history []Message) (string, error)
}

// StandInAssistant is a clearly labelled stand-in for a model: it reads
// the decrypted conversation, exactly as a real model would receive it,
// and answers with a summary of what it read.
type StandInAssistant struct{}

// Reply summarises the context it was given.
func (StandInAssistant) Reply(_ context.Context, history []Message) (string, error) {
	var last string
	users := 0
	for _, m := range history {
		if m.Role == "user" {
			users++
			last = m.Body
		}
	}
	if r := []rune(last); len(r) > 80 {
		last = string(r[:80]) + "…"
	}
	return fmt.Sprintf("[stand-in assistant] I read %d messages of context (%d from you). You said: %q", len(history), users, last), nil
}

// Limits of the API.
const (
	maxMessageBytes = 8 << 10
	maxTitleBytes   = 200
	maxBodyBytes    = 16 << 10
	contextMessages = 50
	sessionTTL      = 24 * time.Hour
)

// Server is the chat service.
type Server struct {
	store     *Store
	hasher    *password.Hasher
	assistant Assistant
	attempts  *attemptLimiter
	dummyHash string // verified for unknown accounts, so timing does not reveal which exist
}

func newServer(store *Store, hasher *password.Hasher, a Assistant) (*Server, error) {
	dummy, err := hasher.Hash(context.Background(), []byte("ward-chat dummy password"))
	if err != nil {
		return nil, err
	}
	return &Server{store: store, hasher: hasher, assistant: a, attempts: newAttemptLimiter(5, time.Minute), dummyHash: dummy}, nil
}

//go:embed web/index.html
var indexHTML []byte

// Handler returns the HTTP routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'")
		w.Write(indexHTML)
	})
	mux.HandleFunc("POST /api/signup", s.signup)
	mux.HandleFunc("POST /api/login", s.login)
	mux.HandleFunc("POST /api/logout", s.logout)
	mux.HandleFunc("GET /api/conversations", s.auth(s.listConversations))
	mux.HandleFunc("POST /api/conversations", s.auth(s.createConversation))
	mux.HandleFunc("GET /api/conversations/{id}/messages", s.auth(s.listMessages))
	mux.HandleFunc("POST /api/conversations/{id}/messages", s.auth(s.sendMessage))
	return mux
}

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, msg string) { writeJSON(w, code, apiError{msg}) }

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

func (c credentials) valid() bool {
	return strings.Contains(c.Email, "@") && len(c.Email) <= 254 && utf8.ValidString(c.Email)
}

func (s *Server) signup(w http.ResponseWriter, r *http.Request) {
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
	hash, err := s.hasher.Hash(r.Context(), []byte(c.Password))
	if errors.Is(err, password.ErrBusy) {
		fail(w, http.StatusServiceUnavailable, "busy, try again")
		return
	}
	if err != nil {
		fail(w, http.StatusBadRequest, "password not accepted")
		return
	}
	id, err := s.store.CreateUser(r.Context(), c.Email, hash)
	if errors.Is(err, ErrExists) {
		fail(w, http.StatusConflict, "an account with this e-mail exists")
		return
	}
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not create the account")
		return
	}
	s.startSession(w, r, id, http.StatusCreated)
}

func (s *Server) startSession(w http.ResponseWriter, r *http.Request, user int64, code int) {
	var b [32]byte
	rand.Read(b[:])
	token := base64.RawURLEncoding.EncodeToString(b[:])
	if err := s.store.CreateSession(r.Context(), token, user, sessionTTL); err != nil {
		fail(w, http.StatusInternalServerError, "could not start a session")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "session", Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(sessionTTL.Seconds())})
	writeJSON(w, code, map[string]string{"status": "ok"})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var c credentials
	if !decode(w, r, &c) {
		return
	}
	key := strings.ToLower(strings.TrimSpace(c.Email))
	if !s.attempts.allow(key) {
		fail(w, http.StatusTooManyRequests, "too many failed attempts, wait a minute")
		return
	}
	id, stored, err := s.store.UserByEmail(r.Context(), c.Email)
	if err != nil {
		// Same work as a real check, then the same answer.
		s.hasher.Verify(r.Context(), []byte(c.Password), s.dummyHash)
		s.attempts.fail(key)
		fail(w, http.StatusUnauthorized, "wrong e-mail or password")
		return
	}
	upgraded, _, err := s.hasher.VerifyAndUpgrade(r.Context(), []byte(c.Password), stored)
	if errors.Is(err, password.ErrBusy) {
		fail(w, http.StatusServiceUnavailable, "busy, try again")
		return
	}
	if err != nil {
		s.attempts.fail(key)
		fail(w, http.StatusUnauthorized, "wrong e-mail or password")
		return
	}
	if upgraded != "" {
		s.store.UpdatePassword(r.Context(), id, stored, upgraded)
	}
	s.attempts.reset(key)
	s.startSession(w, r, id, http.StatusOK)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie("session"); err == nil {
		s.store.DeleteSession(r.Context(), c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: "session", Value: "", Path: "/", MaxAge: -1})
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) auth(next func(http.ResponseWriter, *http.Request, int64)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("session")
		if err != nil {
			fail(w, http.StatusUnauthorized, "log in first")
			return
		}
		user, err := s.store.SessionUser(r.Context(), c.Value)
		if err != nil {
			fail(w, http.StatusUnauthorized, "log in first")
			return
		}
		next(w, r, user)
	}
}

func (s *Server) listConversations(w http.ResponseWriter, r *http.Request, user int64) {
	cs, err := s.store.Conversations(r.Context(), user)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not load conversations")
		return
	}
	if cs == nil {
		cs = []Conversation{}
	}
	writeJSON(w, http.StatusOK, cs)
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request, user int64) {
	var in struct {
		Title string `json:"title"`
	}
	if !decode(w, r, &in) {
		return
	}
	if in.Title == "" || len(in.Title) > maxTitleBytes || !utf8.ValidString(in.Title) {
		fail(w, http.StatusBadRequest, "a title of at most 200 bytes is required")
		return
	}
	c, err := s.store.CreateConversation(r.Context(), user, in.Title)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not create the conversation")
		return
	}
	writeJSON(w, http.StatusCreated, c)
}

// conversation resolves {id} for the user; another user's conversation and
// a missing one get the same 404 after the same query.
func (s *Server) conversation(w http.ResponseWriter, r *http.Request, user int64) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || s.store.owns(r.Context(), user, id) != nil {
		fail(w, http.StatusNotFound, "no such conversation")
		return 0, false
	}
	return id, true
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, user int64) {
	conv, ok := s.conversation(w, r, user)
	if !ok {
		return
	}
	ms, err := s.store.Messages(r.Context(), conv, contextMessages)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not load messages")
		return
	}
	if ms == nil {
		ms = []Message{}
	}
	writeJSON(w, http.StatusOK, ms)
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, user int64) {
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
		fail(w, http.StatusBadRequest, "a message of 1 to 8192 bytes of UTF-8 is required")
		return
	}
	mine, err := s.store.AddMessage(r.Context(), conv, "user", in.Body)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not store the message")
		return
	}
	// The assistant reads the decrypted context through the same API a
	// real model would get.
	history, err := s.store.Messages(r.Context(), conv, contextMessages)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not load the context")
		return
	}
	text, err := s.assistant.Reply(r.Context(), history)
	if err != nil {
		fail(w, http.StatusBadGateway, "the assistant failed")
		return
	}
	reply, err := s.store.AddMessage(r.Context(), conv, "assistant", text)
	if err != nil {
		fail(w, http.StatusInternalServerError, "could not store the reply")
		return
	}
	writeJSON(w, http.StatusCreated, []Message{mine, reply})
}

// attemptLimiter counts failed log-ins per account key in a window.
type attemptLimiter struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	fails  map[string][]time.Time
}

func newAttemptLimiter(max int, window time.Duration) *attemptLimiter {
	return &attemptLimiter{max: max, window: window, fails: map[string][]time.Time{}}
}

func (l *attemptLimiter) recent(key string) []time.Time {
	cut := time.Now().Add(-l.window)
	ts := l.fails[key]
	i := 0
	for i < len(ts) && ts[i].Before(cut) {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(l.fails, key)
	} else {
		l.fails[key] = ts
	}
	return ts
}

func (l *attemptLimiter) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recent(key)) < l.max
}

func (l *attemptLimiter) fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.fails) > 100_000 { // bound memory under a spray of addresses
		l.fails = map[string][]time.Time{}
	}
	l.fails[key] = append(l.recent(key), time.Now())
}

func (l *attemptLimiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.fails, key)
}
