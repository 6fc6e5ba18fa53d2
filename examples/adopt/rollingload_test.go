package adopt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/wardlab/ward/password"
)

// client sends every request on a fresh connection, so that a process
// that drains never meets a request on a connection it is closing.
var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// pick returns the address of the process a request goes to.
func (r *rolling) pick(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.urls[n%len(r.urls)]
}

// loadStart starts the clients: look-ups, log-ins, sign-ups and, once
// every process runs ward, notes written and read, through every process.
func (r *rolling) loadStart() {
	ctx, stop := context.WithCancel(r.ctx)
	r.stop = stop
	for w := range 8 {
		r.wg.Go(func() {
			for n := w; ctx.Err() == nil; n += 9 {
				r.one(n)
				time.Sleep(15 * time.Millisecond)
			}
		})
	}
}

func (r *rolling) loadStop() {
	r.stop()
	r.wg.Wait()
	r.stop = nil
}

// one sends one request and counts what went wrong. Half the reads go to
// what was written last, so that a value another release just wrote is
// read during the overlap.
func (r *rolling) one(n int) {
	r.counts.requests.Add(1)
	base := r.pick(n)
	r.mu.Lock()
	u := pickRecent(r.users, n)
	nt := pickRecent(r.notes, n)
	r.mu.Unlock()
	switch n % 6 {
	case 0:
		r.signUp(base)
	case 1:
		status, body, err := r.post(base+"/login", map[string]any{"email": strings.ToLower(u.email), "password": u.pw})
		if err != nil || status != http.StatusOK {
			r.counts.failedLogins.Add(1)
			r.fail("log-in of %s at %s: %d %v %.200s", u.email, base, status, err, body)
		}
	case 2:
		if r.notesOn.Load() {
			r.addNote(base, u.email)
		}
	case 3:
		if nt.id != 0 {
			var got struct{ Owner, Body string }
			status, err := r.get(fmt.Sprintf("%s/notes/%d", base, nt.id), &got)
			r.check(status, err, got.Body == nt.body && got.Owner == nt.owner, "note %d at %s: %q", nt.id, base, got.Body)
		}
	case 4:
		var got struct{ Email string }
		status, err := r.get(base+"/users?email="+url.QueryEscape(strings.ToLower(u.email)), &got)
		r.check(status, err, got.Email == u.email, "look-up of %s at %s: %q", u.email, base, got.Email)
	default:
		var got struct{ Email string }
		status, err := r.get(fmt.Sprintf("%s/users/%d", base, u.id), &got)
		r.check(status, err, got.Email == u.email, "user %d at %s: %q", u.id, base, got.Email)
	}
}

// pickRecent picks one of xs, every other time among the last ten.
func pickRecent[T any](xs []T, n int) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	if n%2 == 0 {
		return xs[len(xs)-1-(n/2)%min(10, len(xs))]
	}
	return xs[(n*7919)%len(xs)]
}

func (r *rolling) signUp(base string) {
	i := r.seq.Add(1)
	u := user{email: fmt.Sprintf("Signed%d@Example.com", i), pw: fmt.Sprintf("password %d", i)}
	status, body, err := r.post(base+"/users", map[string]any{"email": u.email, "name": "load", "password": u.pw})
	var created struct{ ID int64 }
	if err != nil || status != http.StatusCreated || json.Unmarshal(body, &created) != nil {
		r.fail("sign-up at %s: %d %v %.200s", base, status, err, body)
		return
	}
	u.id = created.ID
	r.mu.Lock()
	r.users = append(r.users, u)
	r.mu.Unlock()
}

func (r *rolling) addNote(base, owner string) {
	id := 1_000_000 + r.seq.Add(1)
	nt := note{id, owner, fmt.Sprintf("note %d of %s", id, owner)}
	status, body, err := r.post(base+"/notes", map[string]any{"id": id, "owner": owner, "body": nt.body})
	if err != nil || status != http.StatusCreated {
		r.fail("note at %s: %d %v %.200s", base, status, err, body)
		return
	}
	r.mu.Lock()
	r.notes = append(r.notes, nt)
	r.mu.Unlock()
}

// check counts a read: failed unless 200, wrong if 200 with other content.
func (r *rolling) check(status int, err error, right bool, format string, args ...any) {
	switch {
	case err != nil || status != http.StatusOK:
		r.fail(format+fmt.Sprintf(" (%d %v)", status, err), args...)
	case !right:
		r.counts.wrong.Add(1)
		r.fail("WRONG "+format, args...)
	}
}

func (r *rolling) fail(format string, args ...any) {
	r.counts.failed.Add(1)
	r.firstMu.Lock()
	if len(r.first) < 5 {
		r.first = append(r.first, fmt.Sprintf(format, args...))
	}
	r.firstMu.Unlock()
}

func (r *rolling) post(u string, v any) (int, []byte, error) {
	body, _ := json.Marshal(v)
	resp, err := client.Post(u, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes(), nil
}

func (r *rolling) get(u string, v any) (int, error) {
	resp, err := client.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		json.NewDecoder(resp.Body).Decode(v)
	}
	return resp.StatusCode, nil
}

// report fails the test on any wrong read, failed log-in or failed request.
func (r *rolling) report() {
	req, wrong, logins, failed := r.counts.requests.Load(), r.counts.wrong.Load(), r.counts.failedLogins.Load(), r.counts.failed.Load()
	r.t.Logf("rolling deploy: %d requests, %d wrong reads, %d failed log-ins, %d failed requests; %d users, %d notes", req, wrong, logins, failed, len(r.users), len(r.notes))
	if wrong+logins+failed > 0 || req < 100 {
		r.t.Errorf("%d wrong reads, %d failed log-ins, %d failed requests of %d, e.g. %q", wrong, logins, failed, req, r.first)
	}
}

// checkStored looks at the database as a reader would: no plaintext
// address, no bcrypt hash of a user who logged in since Argon2id opened
// is required, but every new hash since is peppered Argon2id.
func (r *rolling) checkStored() {
	var plain int
	if err := r.db.QueryRow(`SELECT COUNT(*) FROM users WHERE email NOT LIKE 'w3:%' AND email NOT LIKE 'w4:%'`).Scan(&plain); err != nil || plain != 0 {
		r.t.Fatalf("%d plaintext addresses left (%v)", plain, err)
	}
	var argon, peppered, bcrypts int
	rows, err := r.db.Query(`SELECT password FROM users`)
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		rows.Scan(&h)
		switch {
		case strings.HasPrefix(h, "$argon2id$"):
			argon++
			if strings.Contains(h, "keyid=") {
				peppered++
			}
		default:
			if p, _, err := password.Inspect(h); err == nil && p.Scheme == password.Bcrypt {
				bcrypts++
			}
		}
	}
	r.t.Logf("stored hashes: %d Argon2id (%d peppered), %d bcrypt", argon, peppered, bcrypts)
	if peppered == 0 {
		r.t.Fatal("no hash was upgraded to peppered Argon2id")
	}
}
