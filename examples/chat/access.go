package chat

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
)

// The access log.
//
// Every time the service lets anyone but a user read that user's
// messages — today the assistant, in the service or in its worker process
// under a subject grant — it first appends an entry to the access log, and
// the user's page lists their entries (GET /api/access). An entry holds no
// plaintext: who read, when, which conversation and how many messages.
//
// The entries form one chain, in the order of seq: each one's head is the
// ledger's tally link (ledger.Tally.Add) from the head of the entry before
// over the entry's identity (accessIdentity), and each row carries a row
// MAC over all its fields, bound to the database and rotating with the
// keyring (accessMACs). Every minute (Config.AccessAnchorEvery) and at
// Close, the service anchors the log: it checks the new entries and adds
// them to the ledger's tally "chat.access", which the keyring file
// anchors. So a database writer can neither plant an entry (no MAC), nor
// copy one from another database (the MAC names the database), nor delete
// or alter an anchored one without the audit (AuditAccess, run at start
// and by 'ward-chat access-audit') reporting the break. What it cannot see
// is in SECURITY.md: an operator with the keys reading the database
// directly, and the entries since the last anchor, which a database writer
// can delete from the tail.

// accessTally is the ledger's tally that anchors the access log.
const accessTally = "chat.access"

// accessMACs is the access log's row MAC: every field, the chain's head
// included.
var accessMACs = ledger.MACColumn{Table: "access_log", Column: "mac", Key: "seq",
	Covers: []string{"seq", "user_id", "at", "reader", "conversation_id", "messages", "head"}}

// Readers named by the access log.
const (
	// ReaderAssistant is the assistant reading a conversation's
	// messages in the service's own process, for its reply.
	ReaderAssistant = "assistant"
	// ReaderAssistantWorker is the assistant's worker process, handed the
	// ciphertexts and a one-request subject grant of message bodies.
	ReaderAssistantWorker = "assistant-worker"
)

// AccessEntry is one reading of a user's messages by another party, as
// the user's page shows it.
type AccessEntry struct {
	Seq          uint64    `json:"seq,string"`
	At           time.Time `json:"at"`
	Reader       string    `json:"reader"`
	Conversation int64     `json:"conversation,string"`
	Messages     int       `json:"messages"`
	// Anchored: the entry is counted by the ledger's anchored tally, so
	// that deleting it is caught by the audit. A newer one can still be
	// deleted from the tail unseen.
	Anchored bool `json:"anchored"`
	// Error, when set, says the entry failed its integrity check: its
	// other fields are unproven and left out.
	Error string `json:"error,omitempty"`
}

// accessIntegrityError is shown in place of an entry that fails its MAC.
const accessIntegrityError = "integrity error: this entry was altered, planted or copied in the database"

// accessRow is a stored entry.
type accessRow struct {
	seq          uint64
	user         int64
	at           int64 // Unix milliseconds
	reader       string
	conversation int64
	messages     int64
	head, mac    []byte
}

// accessIdentity is what the chain counts for an entry: its fields, each
// length-prefixed or fixed-size, in the order of accessMACs.Covers.
func accessIdentity(r accessRow) []byte {
	b := make([]byte, 0, 48+len(r.reader))
	b = binary.BigEndian.AppendUint64(b, r.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(r.user))
	b = binary.BigEndian.AppendUint64(b, uint64(r.at))
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.reader)))
	b = append(b, r.reader...)
	b = binary.BigEndian.AppendUint64(b, uint64(r.conversation))
	return binary.BigEndian.AppendUint64(b, uint64(r.messages))
}

func (r accessRow) macValues() []any {
	return []any{int64(r.seq), r.user, r.at, r.reader, r.conversation, r.messages, r.head}
}

// accessLog appends to, anchors and audits the log.
type accessLog struct {
	db      *sql.DB
	dialect field.Dialect
	mac     *field.RowMAC
	lg      *ledger.Ledger
	kr      *keyring.Keyring
	mu      sync.Mutex // one append of this process at a time
	anchor  sync.Mutex // one anchor of this process at a time
	// anchored is the tally's count as this process last read it: an
	// append past it needs no read of the ledger.
	anchored atomic.Uint64
}

// ErrAccessLog means the access log could not record a reading: the
// service refuses the reading rather than let it go unrecorded.
var ErrAccessLog = errors.New("chat: the access log could not record the reading")

// record appends an entry before the reading it records.
func (a *accessLog) record(ctx context.Context, user int64, reader string, conv int64, messages int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for attempt := 1; ; attempt++ {
		err := a.appendOnce(ctx, accessRow{user: user, at: time.Now().UnixMilli(), reader: reader, conversation: conv, messages: int64(messages)})
		if err == nil {
			return nil
		}
		// Another process took the same seq (a unique violation) or the
		// database rolled one back for another: run again.
		if (!field.Duplicate(err) && !field.Retryable(err)) || attempt == 8 {
			return fmt.Errorf("%w: %w", ErrAccessLog, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrAccessLog, ctx.Err())
		case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
		}
	}
}

func (a *accessLog) appendOnce(ctx context.Context, r accessRow) (err error) {
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var last int64
	var head []byte
	err = tx.QueryRowContext(ctx, `SELECT seq, head FROM access_log ORDER BY seq DESC LIMIT 1`).Scan(&last, &head)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	r.seq = uint64(last)
	if r.seq <= a.anchored.Load() {
		// The first entry, or the entries since an anchor lost (a
		// failover): the chain continues from the anchored tally, which
		// the audit reports the lost ones against.
		t, err := a.tally(ctx)
		if err != nil {
			return err
		}
		if t.Count >= r.seq {
			r.seq, head = t.Count, t.Head
		}
	}
	r.seq++
	r.head = ledger.Tally{Count: r.seq - 1, Head: head}.Add(accessIdentity(r)).Head
	if r.mac, err = a.mac.Sum(r.macValues()...); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, a.dialect.Rebind(`INSERT INTO access_log (seq, user_id, at, reader, conversation_id, messages, head, mac) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		int64(r.seq), r.user, r.at, r.reader, r.conversation, r.messages, r.head, r.mac)
	if err != nil {
		return err
	}
	return tx.Commit()
}

// forUser returns a user's newest entries, newest first.
func (a *accessLog) forUser(ctx context.Context, user int64, limit int) ([]AccessEntry, error) {
	t, err := a.tally(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := a.db.QueryContext(ctx, a.dialect.Rebind(`SELECT seq, user_id, at, reader, conversation_id, messages, head, mac FROM access_log WHERE user_id = ? ORDER BY seq DESC LIMIT ?`), user, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []AccessEntry{}
	for rows.Next() {
		r, err := scanAccess(rows)
		if err != nil {
			return nil, err
		}
		if err := a.mac.Verify(r.mac, r.macValues()...); err != nil {
			out = append(out, AccessEntry{Seq: r.seq, Error: accessIntegrityError})
			continue
		}
		out = append(out, AccessEntry{Seq: r.seq, At: time.UnixMilli(r.at).UTC(), Reader: r.reader,
			Conversation: r.conversation, Messages: int(r.messages), Anchored: r.seq <= t.Count})
	}
	return out, rows.Err()
}

// tally is the ledger's anchored tally of the log, as verified now.
func (a *accessLog) tally(ctx context.Context) (ledger.Tally, error) {
	st, err := a.lg.Verified(ctx, a.kr)
	if err != nil {
		return ledger.Tally{}, err
	}
	t := st.Tally(accessTally)
	a.anchored.Store(t.Count)
	return t, nil
}

func scanAccess(rows *sql.Rows) (accessRow, error) {
	var r accessRow
	var seq int64
	err := rows.Scan(&seq, &r.user, &r.at, &r.reader, &r.conversation, &r.messages, &r.head, &r.mac)
	r.seq = uint64(seq)
	return r, err
}

// ErrAccessBroken means the access log does not continue its anchored
// chain: an entry the ledger's tally counts was deleted or altered, or one
// after it is missing, altered or planted.
var ErrAccessBroken = errors.New("chat: the access log is broken")

// walk checks the entries after t in order, up to limit of them (0: all),
// and returns the tally they continue to and their identities.
func (a *accessLog) walk(ctx context.Context, t ledger.Tally, limit int) (ledger.Tally, [][]byte, error) {
	q := `SELECT seq, user_id, at, reader, conversation_id, messages, head, mac FROM access_log WHERE seq > ? ORDER BY seq`
	args := []any{int64(t.Count)}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := a.db.QueryContext(ctx, a.dialect.Rebind(q), args...)
	if err != nil {
		return t, nil, err
	}
	defer rows.Close()
	var ids [][]byte
	for rows.Next() {
		r, err := scanAccess(rows)
		if err != nil {
			return t, nil, err
		}
		if r.seq != t.Count+1 {
			return t, nil, fmt.Errorf("%w: entry %d is missing (the next is %d)", ErrAccessBroken, t.Count+1, r.seq)
		}
		if err := a.mac.Verify(r.mac, r.macValues()...); err != nil {
			return t, nil, fmt.Errorf("%w: entry %d fails its MAC (altered, planted or copied from another database): %w", ErrAccessBroken, r.seq, err)
		}
		id := accessIdentity(r)
		next := t.Add(id)
		if !bytes.Equal(next.Head, r.head) {
			return t, nil, fmt.Errorf("%w: entry %d does not continue the chain of the entries before it", ErrAccessBroken, r.seq)
		}
		t, ids = next, append(ids, id)
	}
	return t, ids, rows.Err()
}

// anchorOnce adds the entries since the anchored tally to it, up to
// maxAnchor of them, and returns how many. Another process that anchors
// the same entries first makes this one add none.
func (a *accessLog) anchorOnce(ctx context.Context) (int, error) {
	a.anchor.Lock()
	defer a.anchor.Unlock()
	from, err := a.tally(ctx)
	if err != nil {
		return 0, err
	}
	_, ids, err := a.walk(ctx, from, maxAnchor)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	prevs, saveAnchor, err := a.lg.TallyEachTx(ctx, tx, a.kr, accessTally, ids)
	if err == nil && !prevs[0].Equal(from) {
		err = errAnchoredMeanwhile
	}
	if err != nil {
		tx.Rollback()
		if errors.Is(err, errAnchoredMeanwhile) || field.Retryable(err) {
			return 0, nil // another process anchored: the next round continues from its tally
		}
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	if err := saveAnchor(ctx); err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
		return len(ids), err
	}
	return len(ids), nil
}

// maxAnchor bounds the entries one anchor adds (a backlog anchors over
// several rounds).
const maxAnchor = 10000

var errAnchoredMeanwhile = errors.New("chat: another process anchored the access log first")

// AccessAudit is what an audit of the whole access log found.
type AccessAudit struct {
	// Anchored is the entries the ledger's tally counts, all of them
	// found intact; Unanchored the intact entries after them.
	Anchored, Unanchored uint64
}

// audit checks the whole log against the anchored tally: every counted
// entry present, unaltered and in its place, then the entries after.
func (a *accessLog) audit(ctx context.Context) (AccessAudit, error) {
	want, err := a.tally(ctx)
	if err != nil {
		return AccessAudit{}, err
	}
	got := ledger.Tally{Count: want.Since, Since: want.Since}
	if want.Count > want.Since {
		if got, _, err = a.walk(ctx, got, int(want.Count-want.Since)); err != nil {
			return AccessAudit{}, err
		}
	}
	if !got.Equal(want) {
		return AccessAudit{}, fmt.Errorf("%w: the ledger's anchored tally counts %d entries, the database holds %d of them intact (deleted, or lost in a failover or restore)", ErrAccessBroken, want.Count, got.Count)
	}
	_, more, err := a.walk(ctx, want, 0)
	if err != nil {
		return AccessAudit{}, err
	}
	return AccessAudit{Anchored: want.Count, Unanchored: uint64(len(more))}, nil
}

// accessAnchorEvery is the default of Config.AccessAnchorEvery.
const accessAnchorEvery = time.Minute

// anchorAccessEvery anchors the access log every period until ctx ends,
// then once more, and closes s.anchored.
func (s *Service) anchorAccessEvery(ctx context.Context, every time.Duration) {
	defer close(s.anchored)
	if every <= 0 {
		every = accessAnchorEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.anchorAccess(ctx)
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			s.anchorAccess(last)
			cancel()
			return
		}
	}
}

func (s *Service) anchorAccess(ctx context.Context) {
	// Not beside this process's rotation, whose compare-and-swap of the
	// ledger an anchor would make it run again: the next round anchors.
	if !s.rotMu.TryLock() {
		return
	}
	defer s.rotMu.Unlock()
	if _, err := s.AnchorAccess(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("access log: anchoring failed", "err", err)
	}
}

// AnchorAccess adds the access log's entries since its last anchor to
// the ledger's anchored tally, after checking that they continue its
// chain, and returns how many it added. The service runs it every
// Config.AccessAnchorEvery and at Close.
func (s *Service) AnchorAccess(ctx context.Context) (int, error) {
	n := 0
	for {
		k, err := s.store.access.anchorOnce(ctx)
		n += k
		if err != nil || k < maxAnchor {
			return n, err
		}
	}
}

// AuditAccess checks the whole access log against its anchored tally
// (every entry the ledger counts present, unaltered and in its place, and
// those after it intact); an error matching [ErrAccessBroken] names the
// first break. The service runs it at start ('ward-chat access-audit' on
// demand).
func (s *Service) AuditAccess(ctx context.Context) (AccessAudit, error) {
	return s.store.access.audit(ctx)
}

// auditAccessAtStart logs what the audit finds: a broken log is the
// operator's to investigate, and does not stop the service.
func (s *Service) auditAccessAtStart(ctx context.Context) {
	a, err := s.AuditAccess(ctx)
	if err != nil {
		s.log.Error("access log: the audit failed: entries users should see may be gone (SECURITY.md, the access log)", "err", err)
		return
	}
	s.log.Info("access log: intact", "anchored", a.Anchored, "since the last anchor", a.Unanchored)
}

// msgAccessLog is the answer when a reading could not be recorded.
const msgAccessLog = "the assistant's reading could not be recorded in your access log, so it did not read: try again"

// recordAccess records, before it happens, the reading of a
// conversation's last messages (as many as the assistant reads) by
// reader; on false it has written the error response.
func (s *server) recordAccess(ctx context.Context, w http.ResponseWriter, user int64, reader string, conv int64) bool {
	var n int
	err := s.store.db.QueryRowContext(ctx, s.store.q(`SELECT COUNT(*) FROM (SELECT 1 AS one FROM messages WHERE conversation_id = ? AND user_id = ? LIMIT ?) AS m`), conv, user, contextMessages).Scan(&n)
	if err == nil {
		err = s.store.access.record(ctx, user, reader, conv, n)
	}
	if err != nil {
		s.log.Error("access log", "err", err)
		fail(w, http.StatusServiceUnavailable, msgAccessLog)
		return false
	}
	return true
}

// listAccess answers GET /api/access: the user's newest entries of the
// access log, each checked against its MAC (one that fails shows as an
// integrity error), and which are anchored.
func (s *server) listAccess(w http.ResponseWriter, r *http.Request, user int64) {
	es, err := s.store.access.forUser(r.Context(), user, accessPage)
	if err != nil {
		s.log.Error("access log: reading a user's entries", "err", err)
		fail(w, http.StatusInternalServerError, "could not read your access log")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": es})
}

// accessPage is how many entries the user's page shows.
const accessPage = 100
