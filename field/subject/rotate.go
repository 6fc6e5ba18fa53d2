package subject

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/keyring"
)

// RotateStats counts a subject-key rotation.
type RotateStats struct {
	Subjects int64 // subjects seen
	Rotated  int64 // subjects given a new key version
	UserHeld int64 // private subjects: skipped (only their users hold their keys)
	Lost     int64 // subjects whose newest key was lost in a reset: skipped
}

// RotateAll gives every subject of the namespace whose newest key the
// keyring wraps a new key version (the newest plus one), in batches.
// Sealing moves to the new version at once in this process and within the
// TTL in others; values under older versions still open, and a re-sealing
// job (reseal.Job over a PerSubject column) moves them to the newest
// version. Older versions stay, so that nothing is lost; forgetting a
// subject deletes them all. Each run adds one version per subject: after
// an interruption, run it again (subjects the first run reached get one
// more version, which costs a row).
func (s *Store) RotateAll(ctx context.Context) (RotateStats, error) {
	var st RotateStats
	if err := s.readFloor(ctx); err != nil {
		return st, err
	}
	var pending []keyRow
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		n, err := s.insertVersions(ctx, pending)
		st.Rotated += n
		pending = pending[:0]
		return err
	}
	var last *keyRow
	visit := func(r keyRow) error {
		st.Subjects++
		switch r.held {
		case heldByUser:
			st.UserHeld++
			return nil
		case heldLost:
			st.Lost++
			return nil
		}
		if r.version >= 1<<32-1 {
			return fmt.Errorf("subject: %s/%s has no key version left", s.cfg.Namespace, r.subject)
		}
		pending = append(pending, r)
		if len(pending) >= 1000 {
			return flush()
		}
		return nil
	}
	err := s.scan(ctx, 1000, func(rows []keyRow) error {
		for i := range rows {
			r := rows[i]
			if last != nil && last.subject != r.subject {
				if err := visit(*last); err != nil {
					return err
				}
			}
			last = &r
		}
		return nil
	})
	if err == nil && last != nil {
		err = visit(*last)
	}
	if err == nil {
		err = flush()
	}
	s.mu.Lock()
	clear(s.cache) // seal under the new versions from now on
	s.mu.Unlock()
	return st, err
}

// insertVersions adds version+1 for each subject's newest row, unless a
// newer version appeared meanwhile (then the insert conflicts or is not
// the newest: harmless).
func (s *Store) insertVersions(ctx context.Context, rows []keyRow) (int64, error) {
	p := s.cfg.Dialect.Placeholder
	var b strings.Builder
	ins, skip := sqltable.IfAbsent(s.cfg.Dialect.String())
	fmt.Fprintf(&b, `%s %s (namespace, subject, version, wrapped, created_at) VALUES `, ins, s.keys)
	args := make([]any, 0, 5*len(rows))
	now := time.Now().Unix()
	for i, r := range rows {
		version := s.nextVersion(uint32(r.version))
		sk, err := keyring.NewSubjectKey(s.cfg.Algorithm, version)
		if err != nil {
			return 0, err
		}
		w, err := s.cfg.Keyring.WrapSubjectKey(sk, s.wrapContext(r.subject, version))
		sk.Destroy()
		if err != nil {
			return 0, err
		}
		if i > 0 {
			b.WriteString(", ")
		}
		m := len(args)
		fmt.Fprintf(&b, "(%s, %s, %s, %s, %s)", p(m+1), p(m+2), p(m+3), p(m+4), p(m+5))
		args = append(args, s.cfg.Namespace, r.subject, int64(version), w, now)
	}
	b.WriteString(skip)
	res, err := s.cfg.DB.ExecContext(ctx, b.String(), args...)
	if err != nil {
		return 0, fmt.Errorf("subject: rotating keys: %w", err)
	}
	return res.RowsAffected()
}

// CurrentVersion returns the version a new value of the subject is sealed
// under: what a re-sealing job compares a value's version with. It reads
// through the cache and never creates a key: a subject without one is
// [field.ErrSubjectKeyMissing]. A forgotten subject is
// [field.ErrSubjectErased].
func (s *Store) CurrentVersion(subject string) (uint32, error) {
	now := s.clock.now()
	s.mu.Lock()
	if c, ok := s.cache[subject]; ok && now < c.expires && c.newest != 0 {
		v := c.newest
		s.mu.Unlock()
		return v, nil
	}
	s.mu.Unlock()
	if err := s.forgottenHere(subject); err != nil {
		return 0, err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	version, wrapped, _, err := s.newest(ctx, subject)
	if err != nil {
		return 0, err
	}
	if wrapped == nil {
		if err := s.checkNotForgotten(ctx, subject); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%w: %s/%s has no key", field.ErrSubjectKeyMissing, s.cfg.Namespace, subject)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.entryLocked(subject)
	c.newest = max(c.newest, version)
	return version, nil
}

var _ field.SubjectKeys = (*Store)(nil)
