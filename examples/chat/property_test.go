package chat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wardlab/ward/field"
)

// chatWorld is the chat as the property test knows it: its users'
// clients, the token each user's texts carry, who went private, who
// deleted their account, and the copies of tables a writer kept.
type chatWorld struct {
	ta      *testApp
	clients []*client
	emails  []string
	ids     []int64
	private []bool
	deleted []bool
	copies  map[string][][]any
	seen    int // the users' own texts shown to them, over the run (the checks are not vacuous)
}

// TestChatWriterProperty: between the chat's requests (messages, going
// private, deleting an account, the sweep), a database writer deletes,
// re-points to another user and puts back older copies of rows of the
// chat's own tables (sessions, conversations, messages, users), at random
// (4 seeds per database, printed on a failure). After every step, through
// the API: no user is ever shown a title or message that carries another
// user's token (no cross-user read, whatever was moved); a user who went
// private never reads as ordinary; and a deleted user's texts are shown to
// nobody.
func TestChatWriterProperty(t *testing.T) {
	forEachDB(t, func(t *testing.T, ta *testApp) {
		seen := 0
		for range 4 {
			seed := rand.Uint64()
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				w := newChatWorld(t, ta, seed)
				r := rand.New(rand.NewPCG(seed, seed>>1|1))
				for step := range 40 {
					w.step(t, r)
					w.check(t, seed, step)
				}
				t.Logf("seed %d: users were shown their own texts %d times", seed, w.seen)
				seen += w.seen
			})
		}
		if seen == 0 { // a seed may delete every session early; four together do not
			t.Fatal("no user was ever shown a text of theirs: the runs checked nothing")
		}
	})
}

func newChatWorld(t *testing.T, ta *testApp, seed uint64) *chatWorld {
	t.Helper()
	w := &chatWorld{ta: ta, copies: map[string][][]any{}}
	for i := range 4 {
		email := fmt.Sprintf("p%d-%d@example.com", seed%100000, i)
		c := ta.client(t)
		c.signup(email)
		w.clients = append(w.clients, c)
		w.emails = append(w.emails, email)
		w.ids = append(w.ids, userID(t, ta, email))
		w.private = append(w.private, false)
		w.deleted = append(w.deleted, false)
	}
	return w
}

// token is the mark every text of user i carries.
func (w *chatWorld) token(i int) string { return fmt.Sprintf("tok%dx%d", i, w.ids[i]) }

func (w *chatWorld) step(t *testing.T, r *rand.Rand) {
	t.Helper()
	i := r.IntN(len(w.clients))
	c := w.clients[i]
	if !w.deleted[i] && c.do("GET", "/api/me", nil, nil) == 401 { // logged out by the writer: log in again
		c.do("POST", "/api/login", credentials{w.emails[i], "correct horse"}, nil)
	}
	switch r.IntN(10) {
	case 0, 1, 2: // a message (and the assistant's reply), in a conversation of theirs
		var cs []Conversation
		c.do("GET", "/api/conversations", nil, &cs)
		if len(cs) > 0 {
			c.do("POST", fmt.Sprintf("/api/conversations/%d/messages", cs[0].ID), map[string]string{"body": "hello " + w.token(i)}, nil)
		}
	case 3: // a new conversation
		c.do("POST", "/api/conversations", map[string]string{"title": "title " + w.token(i)}, nil)
	case 4:
		if !w.deleted[i] && c.do("POST", "/api/private", map[string]any{"password": "correct horse"}, nil) == 200 {
			w.private[i] = true
		}
	case 5:
		if !w.deleted[i] && c.do("POST", "/api/account/delete", map[string]string{"password": "correct horse"}, nil) == 200 {
			w.deleted[i] = true
		}
	case 6:
		w.ta.app.SweepSessions(context.Background())
	default:
		w.attack(t, r)
	}
}

// attack is one database writer's move on the chat's tables.
func (w *chatWorld) attack(t *testing.T, r *rand.Rand) {
	t.Helper()
	tables := []string{"sessions", "conversations", "messages", "users"}
	tb := tables[r.IntN(len(tables))]
	db := w.ta.db
	q := w.ta.app.store.q
	other := w.ids[r.IntN(len(w.ids))]
	switch r.IntN(4) {
	case 0: // keep a copy of the table, for a later restore
		rows, _ := db.Query(`SELECT * FROM ` + tb)
		cols, _ := rows.Columns()
		var keep [][]any
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for k := range vals {
				ptrs[k] = &vals[k]
			}
			rows.Scan(ptrs...)
			keep = append(keep, vals)
		}
		rows.Close()
		w.copies[tb] = keep
	case 1: // delete a row
		row := "rowid"
		if w.ta.app.dialect == field.Postgres {
			row = "ctid"
		}
		db.Exec(fmt.Sprintf(`DELETE FROM %s WHERE %s IN (SELECT %s FROM %s ORDER BY random() LIMIT 1)`, tb, row, row, tb))
	case 2: // re-point a row to another user
		if tb != "users" {
			db.Exec(q(fmt.Sprintf(`UPDATE %s SET user_id = ? WHERE user_id <> ?`, tb)), other, other)
		}
	case 3: // put back an older copy of the table
		if old, ok := w.copies[tb]; ok {
			db.Exec(`DELETE FROM ` + tb)
			for _, row := range old {
				ph := make([]string, len(row))
				for k := range row {
					ph[k] = w.ta.app.dialect.Placeholder(k + 1)
				}
				db.Exec(fmt.Sprintf(`INSERT INTO %s VALUES (%s)`, tb, strings.Join(ph, ", ")), row...)
			}
		}
	}
}

// check reads what each user is shown.
func (w *chatWorld) check(t *testing.T, seed uint64, step int) {
	t.Helper()
	for i, c := range w.clients {
		shown := w.shown(c)
		w.seen += strings.Count(shown, w.token(i))
		for j := range w.clients {
			if j != i && strings.Contains(shown, w.token(j)) {
				t.Fatalf("seed %d, step %d: user %d was shown user %d's text (deleted %v)", seed, step, i, j, w.deleted[j])
			}
		}
		if w.private[i] && !w.deleted[i] {
			var me map[string]any
			if c.do("GET", "/api/me", nil, &me) == 200 && me["private"] == false {
				t.Fatalf("seed %d, step %d: user %d went private and reads ordinary", seed, step, i)
			}
		}
	}
}

// shown is every title and message body the API shows a client.
func (w *chatWorld) shown(c *client) string {
	var b strings.Builder
	var cs []Conversation
	c.do("GET", "/api/conversations", nil, &cs)
	for _, conv := range cs {
		b.WriteString(conv.Title + "\n")
		var ms []Message
		c.do("GET", fmt.Sprintf("/api/conversations/%d/messages", conv.ID), nil, &ms)
		for _, m := range ms {
			b.WriteString(m.Body + "\n")
		}
	}
	return b.String()
}
