package sqltable

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrCommitUnknown means the database did not confirm a commit: the
// connection failed, or the caller stopped waiting (a PostgreSQL commit
// waits for its synchronous standby for as long as it takes, and a
// cancelled wait leaves the transaction committed on the primary). The
// write may have been applied; read the state again to find out.
var ErrCommitUnknown = errors.New("the database did not confirm the commit: it may have been applied")

// noticeKey carries a commit notice in a context (WithCommitNotice).
type noticeKey struct{}

type notice struct {
	after time.Duration
	fn    func(waited time.Duration)
}

// WithCommitNotice returns ctx with a notice: every Commit under it that
// has not returned after the given time calls fn once (from another
// goroutine), so that a command can say it waits, and for what.
func WithCommitNotice(ctx context.Context, after time.Duration, fn func(waited time.Duration)) context.Context {
	return context.WithValue(ctx, noticeKey{}, notice{after, fn})
}

// Commit commits tx. A commit the server refused for a concurrent
// transaction (Conflict) is returned as it is, rolled back for certain;
// any other error is wrapped with [ErrCommitUnknown]. Under a context
// from WithCommitNotice it calls the notice if the commit takes long.
func Commit(ctx context.Context, tx *sql.Tx) error {
	if n, ok := ctx.Value(noticeKey{}).(notice); ok && n.fn != nil {
		start := time.Now()
		t := time.AfterFunc(n.after, func() { n.fn(time.Since(start)) })
		defer t.Stop()
	}
	err := tx.Commit()
	if err == nil || Conflict(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrCommitUnknown, err)
}
