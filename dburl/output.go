package dburl

import (
	"errors"
	"io"
	"strings"
)

// PoolerHint names the fix when err is PostgreSQL's answer to a client
// whose prepared statements a pooler in transaction mode (PgBouncer,
// RDS Proxy, Supavisor) handed to another server connection: SQLSTATE
// 26000 (prepared statement does not exist) or 42P05 (already exists).
// It is "" for any other error.
func PoolerHint(err error) string {
	var pg interface{ SQLState() string } // pgx's *pgconn.PgError, without importing a driver
	if !errors.As(err, &pg) || (pg.SQLState() != "26000" && pg.SQLState() != "42P05") {
		return ""
	}
	return "a connection pooler in transaction mode, or in session mode without a reset query (PgBouncer's server_reset_query = DISCARD ALL), sits between ward and PostgreSQL (PgBouncer, RDS Proxy, Supavisor): add default_query_exec_mode=exec to the database URL (docs/OPERATIONS.md, \"Poolers\")"
}

// Scrub returns a writer that writes to w with every occurrence of each
// secret replaced by REDACTED, so that no message — a driver's own
// included — prints a password the command line or the environment
// handed to a database. Secrets shorter than 3 bytes are left alone
// (they would mangle everything else).
func Scrub(w io.Writer, secrets []string) io.Writer {
	var pairs []string
	for _, s := range secrets {
		if len(s) >= 3 {
			pairs = append(pairs, s, "REDACTED")
		}
	}
	if len(pairs) == 0 {
		return w
	}
	return &scrubber{w: w, r: strings.NewReplacer(pairs...)}
}

type scrubber struct {
	w io.Writer
	r *strings.Replacer
}

func (s *scrubber) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, s.r.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
