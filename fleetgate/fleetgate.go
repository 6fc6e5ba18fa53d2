// Package fleetgate decides, inside one process, whether a column, a password
// hasher or a store may write a new form of what it stores — ciphertext
// where plaintext was, a value under a subject key, an Argon2id or
// peppered hash, a new ciphertext version — or must keep writing the old
// form because some process of the fleet could not read the new one.
//
// A form is opened for a whole database by the fleet registry (package
// fleet): every process declares on its [Gate] what it can read, each
// column or hasher says what it would like to write ([Gate.Want]), and the
// registry opens a form, in the database's authenticated ledger, once
// every registered live process reads it. Until then the Gate answers
// false and the writer keeps the old form. A nil *Gate answers true: an
// application without a fleet writes the new form at once, as before
// forms existed.
package fleetgate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Form names something a process writes that an older process may not
// read. Forms are compared as strings; build them with the functions of
// this package.
type Form string

// Kinds of form, the part of a form's name before its first colon.
const (
	// KindSealed: a column's values may be ciphertexts (the old form is
	// plaintext, read by processes in mixed mode).
	KindSealed = "sealed"
	// KindSubject: a column's values may be sealed under subjects' own
	// keys (the old form is a keyring key).
	KindSubject = "subject"
	// KindPassword: password hashes may use a scheme, or a pepper.
	KindPassword = "password"
	// KindCiphertext: values may be written in a ciphertext version.
	KindCiphertext = "ciphertext"
	// KindIntegrity: integrity records (row MACs, fleet rows, tombstones)
	// may be written in a version.
	KindIntegrity = "integrity"
)

// Release is the ward release that introduced capabilities: every kind of
// form above came with it, and a database that depends on one names it so
// that an operator rolling back knows how far they can go.
const Release = "ward 2026.12"

// Sealed is the form "values of table.column may be ward ciphertexts".
func Sealed(table, column string) Form { return Form(KindSealed + ":" + table + "." + column) }

// Subject is the form "values of table.column may be sealed under subject
// keys" (field.PerSubject).
func Subject(table, column string) Form { return Form(KindSubject + ":" + table + "." + column) }

// Password is the form "password hashes may be written in scheme" (the
// name of a password.Scheme: argon2id, bcrypt, scrypt, pbkdf2-sha256, …).
func Password(scheme string) Form { return Form(KindPassword + ":" + scheme) }

// Pepper is the form "password hashes may be peppered with a keyring key".
const Pepper Form = KindPassword + ":pepper"

// Ciphertext is the form "values may be written in ciphertext version v".
func Ciphertext(version int) Form { return Form(fmt.Sprintf("%s:v%d", KindCiphertext, version)) }

// IntegrityV2 is the form "integrity records may be written v2": bound to
// their database and MAC'd under an integrity epoch (FORMAT.md), which a
// process of a release before them cannot verify.
const IntegrityV2 Form = KindIntegrity + ":v2"

// Kind returns the form's kind (KindSealed, …).
func (f Form) Kind() string {
	k, _, _ := strings.Cut(string(f), ":")
	return k
}

// ReleaseOf returns the release that introduced f's kind ("" for a kind
// this release does not know).
func ReleaseOf(f Form) string {
	switch f.Kind() {
	case KindSealed, KindSubject, KindPassword, KindCiphertext, KindIntegrity:
		return Release
	}
	return ""
}

// Valid reports whether f is a well-formed form name: a known kind, a
// colon, and printable ASCII without commas or spaces (the registry
// separates forms with commas).
func (f Form) Valid() bool {
	k, rest, ok := strings.Cut(string(f), ":")
	if !ok || rest == "" || len(f) > 200 || ReleaseOf(f) == "" || k == "" {
		return false
	}
	return !strings.ContainsFunc(rest, func(r rune) bool { return r <= ' ' || r > '~' || r == ',' })
}

// ErrNotOpen means a writer met a value it can store only in a form the
// fleet has not opened yet (a plaintext that would read as a ciphertext,
// for a column still writing plaintext).
var ErrNotOpen = errors.New("fleetgate: the form is not open yet: not every process of the fleet reads it")

// MissingError means the database depends on forms this process cannot
// read: a process from a release (or a configuration) that lacks them must
// not serve, since it would fail on, or misread, what others wrote.
type MissingError struct {
	// Forms are the open forms the process lacks, each with the release
	// that introduced it and when the database opened it.
	Forms []Opened
}

// Opened is a form a database depends on.
type Opened struct {
	Form    Form      `json:"form"`
	Release string    `json:"release"`
	Opened  time.Time `json:"opened"`
}

func (e *MissingError) Error() string {
	parts := make([]string, len(e.Forms))
	for i, o := range e.Forms {
		parts[i] = fmt.Sprintf("%s (introduced in %s, opened %s)", o.Form, o.Release, o.Opened.UTC().Format(time.RFC3339))
	}
	return "fleetgate: the database depends on forms this process cannot read: " + strings.Join(parts, "; ") +
		": deploy a release that reads them (rolling back past them needs the steps of docs/ADOPTING.md)"
}

// Gate is one process's view of forms: what it reads, what it would like to
// write, and which forms its database has opened. It is safe for
// concurrent use; a nil *Gate allows every form.
type Gate struct {
	mu    sync.Mutex
	can   []Form
	want  []Form
	hold  atomic.Bool
	open  atomic.Pointer[map[Form]bool]
	marks atomic.Pointer[map[string]bool]
	ready chan struct{} // closed by the first SetOpen
	once  sync.Once
}

// New returns a Gate that allows no form until its fleet member has read
// the database's opened forms.
func New() *Gate {
	g := &Gate{ready: make(chan struct{})}
	g.open.Store(&map[Form]bool{})
	return g
}

// Declare records forms this process reads. Columns and hashers declare
// their own; a process that shares the fleet without a column or hasher
// for them (a worker that never reads the column) declares them here, or
// the fleet waits for it.
func (g *Gate) Declare(fs ...Form) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range fs {
		if !slices.Contains(g.can, f) {
			g.can = append(g.can, f)
		}
	}
}

// Want declares f and records that this process would write it once it is
// open.
func (g *Gate) Want(fs ...Form) {
	if g == nil {
		return
	}
	g.Declare(fs...)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range fs {
		if !slices.Contains(g.want, f) {
			g.want = append(g.want, f)
		}
	}
}

// Hold makes the process a reader only: it declares what it reads but asks
// for no form to open (its Wants are not requested). It is the first of
// the two deploys that introduce ward to a fleet whose older processes
// never registered: deploy every process with Hold, then without.
func (g *Gate) Hold() {
	if g != nil {
		g.hold.Store(true)
	}
}

// Held reports whether [Gate.Hold] was called.
func (g *Gate) Held() bool { return g != nil && g.hold.Load() }

// Declared returns the forms this process reads, sorted.
func (g *Gate) Declared() []Form {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := slices.Clone(g.can)
	slices.Sort(out)
	return out
}

// Wanted returns the forms this process would write and its database has
// not opened, sorted; none while held.
func (g *Gate) Wanted() []Form {
	if g == nil || g.hold.Load() {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	open := *g.open.Load()
	var out []Form
	for _, f := range g.want {
		if !open[f] {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// Allows reports whether every process of the fleet reads f, so that it
// may be written. A nil Gate allows everything.
func (g *Gate) Allows(f Form) bool {
	if g == nil {
		return true
	}
	return (*g.open.Load())[f]
}

// SetOpen replaces the set of forms the database has opened (its fleet
// member calls it after each read of the ledger). Forms never close, so a
// form missing from fs that was open stays open.
func (g *Gate) SetOpen(fs []Form) {
	if g == nil {
		return
	}
	g.mu.Lock()
	next := map[Form]bool{}
	for f := range *g.open.Load() {
		next[f] = true
	}
	for _, f := range fs {
		next[f] = true
	}
	g.open.Store(&next)
	g.mu.Unlock()
	g.once.Do(func() { close(g.ready) })
}

// SetMarks adds to the marks the database's ledger records (its fleet
// member calls it after each read of the ledger): facts that never go
// away, such as a job having moved every row of a table to a newer form.
func (g *Gate) SetMarks(marks []string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	next := map[string]bool{}
	if cur := g.marks.Load(); cur != nil {
		for m := range *cur {
			next[m] = true
		}
	}
	for _, m := range marks {
		next[m] = true
	}
	g.marks.Store(&next)
}

// Marked reports whether the database's ledger records mark, as far as
// this process has read it. A nil Gate knows no mark.
func (g *Gate) Marked(mark string) bool {
	if g == nil {
		return false
	}
	m := g.marks.Load()
	return m != nil && (*m)[mark]
}

// Ready is closed once the gate has learned its database's opened forms.
func (g *Gate) Ready() <-chan struct{} {
	if g == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return g.ready
}

// Missing returns, of the opened forms given, those this process does not
// declare, as a [*MissingError] (nil when it reads them all).
func (g *Gate) Missing(opened []Opened) error {
	can := g.Declared()
	var lack []Opened
	for _, o := range opened {
		if !slices.Contains(can, o.Form) {
			lack = append(lack, o)
		}
	}
	if lack == nil {
		return nil
	}
	return &MissingError{Forms: lack}
}
