package chat

import (
	"context"
	"errors"
	"time"

	"github.com/wardlab/ward/field"
)

// Conversation is a user's conversation.
type Conversation struct {
	ID    int64  `json:"id,string"`
	Title string `json:"title"`
	Error string `json:"error,omitempty"`
}

// Message is one message of a conversation.
type Message struct {
	ID    int64  `json:"id,string"`
	Role  string `json:"role"`
	Body  string `json:"body"`
	Error string `json:"error,omitempty"`
}

// Integrity errors shown in place of a value that does not open.
const (
	titleIntegrityError   = "integrity error: this title cannot be decrypted"
	messageIntegrityError = "integrity error: this message cannot be decrypted"
	// A private user's value without their key in the session.
	titleLockedError   = "locked: log in again to read this title"
	messageLockedError = "locked: log in again to read this message"
	// A private user's value sealed before a password reset without
	// the recovery code.
	lostError = "lost in a password reset: this cannot be decrypted any more"
)

// openError is the text shown in place of a value that does not open.
func openError(err error, locked, integrity string) string {
	switch {
	case errors.Is(err, field.ErrSubjectLocked):
		return locked
	case errors.Is(err, field.ErrSubjectKeyLost):
		return lostError
	}
	return integrity
}

// createConversation stores a conversation whose title is bound to its
// owner.
func (s *store) createConversation(ctx context.Context, user int64, title string) (Conversation, error) {
	id := newID()
	enc, err := s.seal(s.cols.title, field.RowInt(id).With(user), title)
	if err != nil {
		return Conversation{}, err
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO conversations (id, user_id, title, created) VALUES (?, ?, ?, ?)`), id, user, enc, time.Now().Unix())
	return Conversation{ID: id, Title: title}, err
}

// conversations lists a user's conversations. A title opens only for the
// user it was sealed for: a conversation re-pointed to another user shows
// an integrity error instead.
func (s *store) conversations(ctx context.Context, user int64) ([]Conversation, error) {
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
		if c.Title, err = s.open(s.cols.title, field.RowInt(c.ID).With(user), raw); err != nil {
			c.Title, c.Error = "", openError(err, titleLockedError, titleIntegrityError)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// owns reports whether the conversation belongs to user. A missing and a
// foreign conversation take the same single indexed query.
func (s *store) owns(ctx context.Context, user, conv int64) error {
	var n int
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM conversations WHERE id = ? AND user_id = ?`), conv, user).Scan(&n); err != nil {
		return err
	}
	if n != 1 {
		return errNotFound
	}
	return nil
}

// addMessage stores a message bound to its row, conversation, owner and
// role.
func (s *store) addMessage(ctx context.Context, user, conv int64, role, body string) (Message, error) {
	id := newID()
	enc, err := s.seal(s.cols.body, field.RowInt(id).With(conv, user, role), body)
	if err != nil {
		return Message{}, err
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO messages (id, conversation_id, user_id, role, body, created) VALUES (?, ?, ?, ?, ?, ?)`),
		id, conv, user, role, enc, time.Now().UnixNano())
	return Message{ID: id, Role: role, Body: body}, err
}

// messages returns the last limit messages of a user's conversation,
// oldest first. A message opens only in the conversation, for the owner
// and with the role it was sealed for; one that fails is reported, not
// dropped, and the rest still load.
func (s *store) messages(ctx context.Context, user, conv int64, limit int) ([]Message, error) {
	stored, err := s.sealedMessages(ctx, user, conv, limit)
	if err != nil {
		return nil, err
	}
	var out []Message
	for _, sm := range stored {
		m := Message{ID: sm.id, Role: sm.role}
		if m.Body, err = s.open(s.cols.body, field.RowInt(sm.id).With(conv, user, sm.role), sm.raw); err != nil {
			m.Body, m.Error = "", openError(err, messageLockedError, messageIntegrityError)
		}
		out = append(out, m)
	}
	return out, nil
}
