package adopt

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/password"
)

// Stage is a release of the application in a rolling adoption of ward
// (docs/ADOPTING.md, "Deploy plans"): each stage reads everything the stage
// before it writes, and writes a new form only once the fleet opened it.
type Stage int

// The stages, in deploy order.
const (
	// StagePlain is the application before ward: plaintext e-mails,
	// bcrypt hashes, no registration.
	StagePlain Stage = iota
	// StageReader reads ciphertexts and the forms of every later stage's
	// column, writes plaintext (its gate holds): the first of the two
	// deploys that introduce ward.
	StageReader
	// StageMixed asks for the sealed e-mail form: once every registered
	// process reads it, new addresses are sealed.
	StageMixed
	// StageEncrypted refuses plaintext (after the migration job).
	StageEncrypted
	// StageArgon2 hashes with peppered Argon2id once the fleet verifies it
	// (bcrypt until then), and upgrades bcrypt hashes on log-in.
	StageArgon2
	// StageSubject seals notes under their owners' own keys once the fleet
	// reads them.
	StageSubject
)

var stageNames = []string{"plain", "reader", "mixed", "encrypted", "argon2", "subject"}

// String names the stage as the --stage flag takes it.
func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return "Stage(" + strconv.Itoa(int(s)) + ")"
}

// ParseStage parses a stage's name.
func ParseStage(name string) (Stage, error) {
	for i, n := range stageNames {
		if n == name {
			return Stage(i), nil
		}
	}
	return 0, fmt.Errorf("adopt: unknown stage %q (want one of %v)", name, stageNames)
}

// legacyBcrypt is what the application wrote before ward.
var legacyBcrypt = password.Params{Scheme: password.Bcrypt, Cost: 10}

// staged is the application's data layer at one stage.
type staged struct {
	stage  Stage
	app    *App
	hasher *password.Hasher
	notes  *field.Column   // nil before StageReader
	gate   *fleetgate.Gate // nil at StagePlain
	store  *subject.Store
}

// newStaged builds the stage's columns and hasher on gate (nil at
// StagePlain).
func newStaged(ctx context.Context, db *sql.DB, d field.Dialect, kr *keyring.Keyring, lg *ledger.Ledger, st Stage) (*staged, error) {
	s := &staged{stage: st, app: &App{DB: db, Dialect: d}}
	var err error
	if st == StagePlain {
		s.hasher, err = password.NewHasher(password.Policy{Preferred: legacyBcrypt, Accept: []password.Scheme{password.Bcrypt}}, nil)
		return s, err
	}
	s.gate = fleetgate.New()
	if st == StageReader {
		s.gate.Hold()
	}
	opts := []field.ColumnOption{field.WithEncoding(field.Text), field.WithForms(s.gate)}
	if st < StageEncrypted {
		opts = append(opts, field.AcceptPlaintext())
	}
	if s.app.Email, err = field.NewColumn(kr, "users", "email", opts...); err != nil {
		return nil, err
	}
	s.app.Mixed = st < StageEncrypted
	if s.app.Emails, err = lg.Indexer(ctx, kr, EmailIndex, field.Fold, ledger.IndexerOptions{Gate: s.gate}); err != nil {
		return nil, err
	}
	policy := password.Policy{Preferred: legacyBcrypt, Accept: []password.Scheme{password.Bcrypt}, Forms: s.gate, Fallback: legacyBcrypt}
	if st >= StageArgon2 {
		policy = password.Policy{Preferred: password.OWASP(), Pepper: kr, Forms: s.gate, Fallback: legacyBcrypt}
	}
	if s.hasher, err = password.NewHasher(policy, nil); err != nil {
		return nil, err
	}
	noteOpts := []field.ColumnOption{field.WithEncoding(field.Text), field.Bind("owner"), field.WithForms(s.gate)}
	if st >= StageSubject {
		if s.store, err = subject.Open(ctx, subject.Config{DB: db, Dialect: d, Keyring: kr, Ledger: lg, Namespace: "users"}); err != nil {
			return nil, err
		}
		noteOpts = append(noteOpts, field.PerSubject(s.store, "owner"))
	}
	s.notes, err = field.NewColumn(kr, "notes", "body", noteOpts...)
	return s, err
}

// ErrLogin means the address or the password is wrong.
var ErrLogin = errors.New("adopt: wrong address or password")

// signUp adds a user with a password hash of the stage's form.
func (s *staged) signUp(ctx context.Context, email, name, pw string) (int64, error) {
	hash, err := s.hasher.Hash(ctx, []byte(pw))
	if err != nil {
		return 0, err
	}
	id, err := s.app.AddUser(ctx, email, name)
	if err != nil {
		return 0, err
	}
	_, err = s.app.DB.ExecContext(ctx, s.app.Dialect.Rebind(`UPDATE users SET password = ? WHERE id = ?`), hash, id)
	return id, err
}

// logIn verifies a password and, when the stage's hasher says so, stores
// the upgraded hash by compare-and-swap on the old one.
func (s *staged) logIn(ctx context.Context, email, pw string) (int64, error) {
	id, _, err := s.app.FindByEmail(ctx, email)
	if err != nil || id == 0 {
		return 0, errors.Join(ErrLogin, err)
	}
	var hash string
	if err := s.app.DB.QueryRowContext(ctx, s.app.Dialect.Rebind(`SELECT password FROM users WHERE id = ?`), id).Scan(&hash); err != nil {
		return 0, err
	}
	up, _, err := s.hasher.VerifyAndUpgrade(ctx, []byte(pw), hash)
	if errors.Is(err, password.ErrMismatch) {
		return 0, ErrLogin
	}
	if err != nil {
		return 0, err
	}
	if up != "" {
		_, err = s.app.DB.ExecContext(ctx, s.app.Dialect.Rebind(`UPDATE users SET password = ? WHERE id = ? AND password = ?`), up, id, hash)
	}
	return id, err
}

// addNote seals a note for its owner.
func (s *staged) addNote(ctx context.Context, id int64, owner, body string) error {
	if s.notes == nil {
		return errors.New("adopt: this release has no notes")
	}
	ct, err := s.notes.SealString(field.RowInt(id).With(owner), body)
	if err != nil {
		return err
	}
	_, err = s.app.DB.ExecContext(ctx, s.app.Dialect.Rebind(`INSERT INTO notes (id, owner, body) VALUES (?, ?, ?)`), id, owner, ct.AsText())
	return err
}

// note opens a note.
func (s *staged) note(ctx context.Context, id int64) (owner, body string, err error) {
	if s.notes == nil {
		return "", "", errors.New("adopt: this release has no notes")
	}
	var ct field.Ciphertext
	if err := s.app.DB.QueryRowContext(ctx, s.app.Dialect.Rebind(`SELECT owner, body FROM notes WHERE id = ?`), id).Scan(&owner, &ct); err != nil {
		return "", "", err
	}
	body, err = s.notes.OpenString(field.RowInt(id).With(owner), ct)
	return owner, body, err
}

// PrepareStages creates the tables the staged application adds to the
// seeded users table: the index and password columns, and the notes.
func PrepareStages(ctx context.Context, db *sql.DB, d field.Dialect) error {
	if err := AddIndexColumn(ctx, db, d); err != nil {
		return err
	}
	for _, q := range []string{`ALTER TABLE users ADD COLUMN password TEXT`, `CREATE TABLE notes (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, body TEXT NOT NULL)`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}
