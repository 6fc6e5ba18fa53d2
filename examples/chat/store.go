// Package chat is seed 000's service built on ward: sign-up and log-in with
// Argon2id (upgrade on log-in, a limiter, rate-limited failures), sessions,
// conversations and messages whose bodies, titles and e-mail addresses are
// encrypted by the field layer and bound to their rows, under a keyring
// wrapped by a KMS key; a stand-in assistant reads the decrypted context
// through the same interface a model would. examples/chat/cmd/ward-chat runs it.
package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// Store holds users, sessions, conversations and messages. Message bodies,
// conversation titles and e-mail addresses are sealed by ward's field
// layer, each bound to its row; e-mail has a blind index for log-in.
type Store struct {
	db      *sql.DB
	dialect field.Dialect
	kr      *keyring.Keyring

	email, title, body *field.Column
	emailIdx           *field.BlindIndex
	encrypt            bool // false only for the lab's "encryption off" baseline
}

// ErrNotFound is returned for rows that do not exist or belong to someone
// else; the API answers both the same way.
var ErrNotFound = errors.New("chat: not found")

// ErrExists is returned when an e-mail address is taken.
var ErrExists = errors.New("chat: account exists")

func newStore(db *sql.DB, dialect field.Dialect, kr *keyring.Keyring, encrypt bool) (*Store, error) {
	s := &Store{db: db, dialect: dialect, kr: kr, encrypt: encrypt}
	var err error
	if s.email, err = field.NewColumn(kr, "users", "email"); err != nil {
		return nil, err
	}
	if s.title, err = field.NewColumn(kr, "conversations", "title"); err != nil {
		return nil, err
	}
	if s.body, err = field.NewColumn(kr, "messages", "body"); err != nil {
		return nil, err
	}
	if s.emailIdx, err = field.NewBlindIndex(kr, "users", "email", field.WithNormalizer(field.NormalizeFold)); err != nil {
		return nil, err
	}
	return s, s.migrate(context.Background())
}

// q rewrites ? placeholders for the database.
func (s *Store) q(query string) string { return s.dialect.Rebind(query) }

// migrations run in order on start; the applied count is kept in
// schema_version.
var migrations = []string{
	`CREATE TABLE users (id BIGINT PRIMARY KEY, email BLOB NOT NULL, email_idx BLOB NOT NULL UNIQUE, password TEXT NOT NULL, created BIGINT NOT NULL)`,
	`CREATE TABLE sessions (token_hash BLOB PRIMARY KEY, user_id BIGINT NOT NULL, expires BIGINT NOT NULL)`,
	`CREATE TABLE conversations (id BIGINT PRIMARY KEY, user_id BIGINT NOT NULL, title BLOB, created BIGINT NOT NULL)`,
	`CREATE TABLE messages (id BIGINT PRIMARY KEY, conversation_id BIGINT NOT NULL, role TEXT NOT NULL, body BLOB, created BIGINT NOT NULL)`,
	`CREATE INDEX messages_conversation ON messages (conversation_id, id)`,
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (n INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("chat: migrations: %w", err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_version`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := s.db.ExecContext(ctx, `INSERT INTO schema_version (n) VALUES (0)`); err != nil {
			return err
		}
	}
	if err := s.db.QueryRowContext(ctx, `SELECT n FROM schema_version`).Scan(&n); err != nil {
		return err
	}
	for i := n; i < len(migrations); i++ {
		m := migrations[i]
		if s.dialect == field.Postgres {
			m = strings.ReplaceAll(m, "BLOB", "BYTEA")
		}
		if _, err := s.db.ExecContext(ctx, m); err != nil {
			return fmt.Errorf("chat: migration %d: %w", i+1, err)
		}
		if _, err := s.db.ExecContext(ctx, s.q(`UPDATE schema_version SET n = ?`), i+1); err != nil {
			return err
		}
	}
	return nil
}

// newID returns a random positive 63-bit ID: no count of rows leaks, and
// IDs are not guessable.
func newID() int64 {
	for {
		var b [8]byte
		rand.Read(b[:])
		if v := int64(binary.BigEndian.Uint64(b[:]) >> 1); v != 0 {
			return v
		}
	}
}

func (s *Store) seal(col *field.Column, id int64, text string) (any, error) {
	if !s.encrypt {
		return []byte(text), nil
	}
	ct, err := col.SealString(field.RowInt(id), text)
	if err != nil {
		return nil, err
	}
	return ct, nil
}

func (s *Store) open(col *field.Column, id int64, raw []byte) (string, error) {
	if !s.encrypt {
		return string(raw), nil
	}
	ct, err := field.ParseCiphertext(raw)
	if err != nil {
		return "", err
	}
	return col.OpenString(field.RowInt(id), ct)
}

// CreateUser stores a new account.
func (s *Store) CreateUser(ctx context.Context, email, passwordHash string) (int64, error) {
	id := newID()
	enc, err := s.seal(s.email, id, email)
	if err != nil {
		return 0, err
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO users (id, email, email_idx, password, created) VALUES (?, ?, ?, ?, ?)`),
		id, enc, s.emailIdx.Compute(email), passwordHash, time.Now().Unix())
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unique") {
		return 0, ErrExists
	}
	return id, err
}

// UserByEmail finds an account by its blind index.
func (s *Store) UserByEmail(ctx context.Context, email string) (id int64, hash string, err error) {
	err = s.db.QueryRowContext(ctx, s.q(`SELECT id, password FROM users WHERE email_idx = ?`), s.emailIdx.Compute(email)).Scan(&id, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", ErrNotFound
	}
	return id, hash, err
}

// UpdatePassword replaces a hash only if it is still the old one
// (compare-and-swap, for upgrade on log-in).
func (s *Store) UpdatePassword(ctx context.Context, id int64, old, new string) error {
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE users SET password = ? WHERE id = ? AND password = ?`), new, id, old)
	return err
}

func tokenHash(token string) []byte { h := sha256.Sum256([]byte(token)); return h[:] }

// CreateSession stores the hash of a session token.
func (s *Store) CreateSession(ctx context.Context, token string, user int64, ttl time.Duration) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO sessions (token_hash, user_id, expires) VALUES (?, ?, ?)`),
		tokenHash(token), user, time.Now().Add(ttl).Unix())
	return err
}

// SessionUser returns the user of a live session.
func (s *Store) SessionUser(ctx context.Context, token string) (int64, error) {
	var user, exp int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT user_id, expires FROM sessions WHERE token_hash = ?`), tokenHash(token)).Scan(&user, &exp)
	if err != nil || exp < time.Now().Unix() {
		return 0, ErrNotFound
	}
	return user, nil
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, token string) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM sessions WHERE token_hash = ?`), tokenHash(token))
	return err
}

// Conversation is a user's conversation.
type Conversation struct {
	ID    int64  `json:"id,string"`
	Title string `json:"title"`
	Error string `json:"error,omitempty"`
}

// CreateConversation stores a conversation with an encrypted title.
func (s *Store) CreateConversation(ctx context.Context, user int64, title string) (Conversation, error) {
	id := newID()
	enc, err := s.seal(s.title, id, title)
	if err != nil {
		return Conversation{}, err
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO conversations (id, user_id, title, created) VALUES (?, ?, ?, ?)`), id, user, enc, time.Now().Unix())
	return Conversation{ID: id, Title: title}, err
}

// Conversations lists a user's conversations.
func (s *Store) Conversations(ctx context.Context, user int64) ([]Conversation, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, title FROM conversations WHERE user_id = ? ORDER BY created, id`), user)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Conversation
	for rows.Next() {
		var c Conversation
		var raw []byte
		if err := rows.Scan(&c.ID, &raw); err != nil {
			return nil, err
		}
		if c.Title, err = s.open(s.title, c.ID, raw); err != nil {
			c.Title, c.Error = "", "integrity error: this title cannot be decrypted"
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// owns reports whether the conversation belongs to user. A missing and a
// foreign conversation take the same single indexed query.
func (s *Store) owns(ctx context.Context, user, conv int64) error {
	var n int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM conversations WHERE id = ? AND user_id = ?`), conv, user).Scan(&n); err != nil {
		return err
	}
	if n != 1 {
		return ErrNotFound
	}
	return nil
}

// Message is one message of a conversation.
type Message struct {
	ID    int64  `json:"id,string"`
	Role  string `json:"role"`
	Body  string `json:"body"`
	Error string `json:"error,omitempty"`
}

// AddMessage stores a message, sealed and bound to its row.
func (s *Store) AddMessage(ctx context.Context, conv int64, role, body string) (Message, error) {
	id := newID()
	enc, err := s.seal(s.body, id, body)
	if err != nil {
		return Message{}, err
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO messages (id, conversation_id, role, body, created) VALUES (?, ?, ?, ?, ?)`),
		id, conv, role, enc, time.Now().UnixNano())
	return Message{ID: id, Role: role, Body: body}, err
}

// Messages returns the last limit messages of a conversation, oldest
// first. A message that fails to open is reported, not dropped, and the
// rest still load.
func (s *Store) Messages(ctx context.Context, conv int64, limit int) ([]Message, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, role, body FROM messages WHERE conversation_id = ? ORDER BY created DESC, id DESC LIMIT ?`), conv, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var raw []byte
		if err := rows.Scan(&m.ID, &m.Role, &raw); err != nil {
			return nil, err
		}
		if m.Body, err = s.open(s.body, m.ID, raw); err != nil {
			m.Body, m.Error = "", "integrity error: this message cannot be decrypted"
		}
		out = append(out, m)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, rows.Err()
}
