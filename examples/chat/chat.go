// Package chat is an example application built on ward: the chat service
// of the field report on encrypting chat messages, hardened as if it were
// in production. Users sign up and log in (Argon2id with a pepper, upgraded
// on log-in, behind a limiter and per-account and per-address limits),
// talk with an assistant in conversations, and every message body,
// conversation title and e-mail address is sealed by the field layer
// before it reaches the database, bound to its row and to the columns that
// decide who may read it. Sessions and password hashes carry row MACs, so
// that a database writer without the keys can neither read nor re-point
// anything. The keyring is sealed by a key service (a local master key or
// a KMS key), saved durably before every change, and recorded in the
// database's ledger, so that the service refuses a keyring that cannot
// open what the database holds.
//
// SECURITY.md at the repository root is its threat model;
// examples/chat/cmd/ward-chat runs it.
package chat

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/subject"
	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/forgetlog"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/password"
)

// Config configures the service. DB, KeyringPath and KeyService are
// required; the rest have defaults.
type Config struct {
	// DB is sqlite:PATH or a postgres:// URL.
	DB string
	// KeyringPath is the keyring file. It must exist, except for Init,
	// which creates it.
	KeyringPath string
	// KeyService seals the keyring: a local master key (kms/local) or a
	// KMS key (kms/kmsurl).
	KeyService kms.KeyService
	// AllowUnpepperedHashes accepts password hashes written before the
	// pepper was on (they are upgraded at the next log-in). Leave it off
	// once every user has logged in: a database writer could otherwise
	// plant an unpeppered hash of a password they know.
	AllowUnpepperedHashes bool
	// Origins are the public origins browsers reach the service at, such
	// as "https://chat.example.com" (https only). A state-changing request
	// that carries an Origin header must name one of them: not merely the
	// Host it was sent to, which DNS rebinding lets an attacker choose.
	// With https origins the session cookie is "__Host-session", Secure.
	// Empty means a local development service, reached as
	// http://localhost, 127.0.0.1 or [::1] on any port, whose cookie is
	// "session" without Secure. Each mode reads only its own cookie.
	Origins []string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is
	// believed; other clients are known by the connection's address.
	TrustedProxies []netip.Prefix
	// Limits bounds clients (zero fields: DefaultLimits).
	Limits Limits
	// Log receives operational events (default: discarded). Secrets and
	// message contents are never logged.
	Log *slog.Logger
	// SubjectTTL bounds how long a process keeps a user's unwrapped key
	// (default 30 s): a deleted account stops opening everywhere within it.
	SubjectTTL time.Duration
	// KeyringPoll is how often the service re-reads its keyring file
	// (default 5 s): a rotation waits about that long for it at each of
	// its two waits.
	KeyringPoll time.Duration
	// AssistantWorker, when set, is the command line of a process that
	// answers for the assistant (examples/chat/worker/assistant.py, on the
	// Python package): it gets each conversation's ciphertexts and a
	// subject grant of message bodies, never a private user's messages.
	AssistantWorker []string
	// OnKeyUsage, if set, hears the fleet's seals per key at each
	// heartbeat (fleet.Registry.OnUsage), beside the service's own warning
	// of a key due for rotation: ward-chat exports them as the metric
	// ward.key.seals (contrib/otel).
	OnKeyUsage func([]fleet.KeyUsage)
	// Recovery offers users who turn on private mode a recovery code
	// (shown once): with it, a password reset keeps their messages. Off,
	// a reset of a private account loses them, and the service says so
	// first. SECURITY.md states what each gives up.
	Recovery bool
	// ForgetJournal is a folder on storage that outlives the database's
	// (package forgetlog): every account deletion is also recorded there
	// before it commits, so that 'ward ledger recover' re-applies it after
	// a failover or restore lost it, and so is every user turning private
	// mode on, which a database writer then cannot turn off by deleting
	// rows. Without it (and without a synchronous standby) the service
	// warns at start.
	ForgetJournal string
	// AccessAnchorEvery is how often the access log's new entries are
	// anchored in the ledger (default a minute; also at Close): entries
	// since the last anchor are the ones a database writer can delete
	// unseen (SECURITY.md).
	AccessAnchorEvery time.Duration
}

// subjectNamespace is the namespace of the users' own keys.
const subjectNamespace = "users"

// openSubjects opens the store of the users' own keys; j, if not nil,
// journals its forgets.
func openSubjects(ctx context.Context, db *sql.DB, dialect field.Dialect, kr *keyring.Keyring, lg *ledger.Ledger, j *forgetlog.Journal, ttl ...time.Duration) (*subject.Store, error) {
	cfg := subject.Config{DB: db, Dialect: dialect, Keyring: kr, Ledger: lg, Namespace: subjectNamespace, Journal: j}
	if len(ttl) > 0 {
		cfg.TTL = ttl[0]
	}
	return subject.Open(ctx, cfg)
}

// durability opens the forget journal (if configured) and says at start
// what the database's replication gives account deletion (a warning when
// deletions a failover or restore loses would come back) and whether
// private mode offers recovery codes.
func durability(ctx context.Context, cfg Config, db *sql.DB, dialect field.Dialect, kr *keyring.Keyring, log *slog.Logger) (*forgetlog.Journal, error) {
	logRecovery(log, cfg.Recovery)
	var j *forgetlog.Journal
	if cfg.ForgetJournal != "" {
		var err error
		if j, err = forgetlog.Open(cfg.ForgetJournal, kr); err != nil {
			return nil, err
		}
		log.Info("forget journal: account deletions and private mode are also recorded in "+j.Dir()+"; give it to 'ward ledger recover --forget-journal' after a failover or restore (docs/OPERATIONS.md)", "dir", j.Dir())
	} else {
		log.Warn("no forget journal: a database writer can switch a user's private mode off by deleting their key rows (SECURITY.md)")
	}
	r, err := ledger.InspectReplication(ctx, db, dialect)
	if err != nil {
		log.Warn("could not read the database's replication settings", "err", err)
		return j, nil
	}
	if line, warn := r.Summary(j != nil); warn {
		log.Warn("durability: " + line)
	} else {
		log.Info("durability: " + line)
	}
	return j, nil
}

// logRecovery says at start whether private mode offers recovery codes.
func logRecovery(log *slog.Logger, offered bool) {
	if offered {
		log.Info("private mode: users who turn it on are offered a recovery code, which keeps their messages through a password reset")
		return
	}
	log.Info("private mode: no recovery code is offered (--recovery offers one): a private user's password reset loses their messages, and the page says so")
}

// Service is a chat service over one database and keyring.
type Service struct {
	cfg     Config
	db      *sql.DB
	dialect field.Dialect
	kr      *keyring.Keyring
	ledger  *ledger.Ledger
	store   *store
	server  *server
	log     *slog.Logger
	rotMu   sync.Mutex // serialises Reload and Rotate
	journal *forgetlog.Journal
	member  *fleet.Member      // the process's registration, from Open to Close
	stop    context.CancelFunc // ends the keyring watch (follow)
	gate    *fleetgate.Gate    // the forms its columns and row MACs write
	// anchored is closed when the access log's anchoring loop has ended,
	// after its last anchor.
	anchored chan struct{}
}

// ErrNoKeyring means the keyring file does not exist: create it with Init
// (ward-chat init), or fix the path. The service never creates a keyring
// by itself.
var ErrNoKeyring = errors.New("chat: no keyring file (run 'ward-chat init' to create one, or check --keyring)")

// ErrInitialised means Init found the database and its keyring file
// already set up (it changes nothing, and returns the keyring).
var ErrInitialised = errors.New("chat: already initialised")

// Init creates a new keyring at cfg.KeyringPath and prepares the database.
// It refuses if the keyring file exists, or if the database already holds
// values sealed under another keyring.
func Init(ctx context.Context, cfg Config) (*keyring.Keyring, error) {
	db, dialect, err := openDB(cfg.DB, true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := migrate(ctx, db, dialect); err != nil {
		return nil, err
	}
	lg := &ledger.Ledger{DB: db, Dialect: dialect}
	if ids, err := lg.Keyrings(ctx); err != nil {
		return nil, err
	} else if len(ids) > 0 {
		// Run twice with the same files: the keyring file opens and is the
		// one the database names.
		if kr, err := keyring.Load(ctx, cfg.KeyringPath, cfg.KeyService); err == nil && slices.Contains(ids, kr.ID()) {
			return kr, fmt.Errorf("%w: keyring %s serves this database", ErrInitialised, kr.ID())
		}
		return nil, fmt.Errorf("%w: the database already holds values sealed under keyring %s; give its keyring file", keyring.ErrWrongKeyring, ids[0])
	}
	kr, err := keyring.Create(ctx, cfg.KeyringPath, cfg.KeyService, keyring.AES256GCM)
	if err != nil {
		return nil, err
	}
	if err := lg.Record(ctx, kr); err != nil {
		return nil, err
	}
	// A new database has nothing to migrate, and its users' blind index
	// starts as v2 under the first key's epoch.
	if err := lg.Mark(ctx, kr, markBound); err != nil {
		return nil, err
	}
	if _, err := lg.Indexer(ctx, kr, emailIndex, field.Fold, ledger.IndexerOptions{}); err != nil {
		return nil, err
	}
	return kr, nil
}

// Open loads the keyring (which must exist), opens the database, runs its
// migrations, and checks the ledger: a keyring that lacks a key ID the
// database uses, belongs to another database, or is older than one already
// seen is refused before anything is written.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.KeyService == nil {
		return nil, errors.New("chat: Config.KeyService is required")
	}
	kr, err := keyring.Load(ctx, cfg.KeyringPath, cfg.KeyService)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", ErrNoKeyring, err)
	}
	if err != nil {
		return nil, err
	}
	db, dialect, err := openDB(cfg.DB)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, cfg, db, dialect, kr)
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func open(ctx context.Context, cfg Config, db *sql.DB, dialect field.Dialect, kr *keyring.Keyring) (*Service, error) {
	if err := migrate(ctx, db, dialect); err != nil {
		return nil, err
	}
	lg := &ledger.Ledger{DB: db, Dialect: dialect}
	if err := lg.Check(ctx, kr); err != nil {
		return nil, fmt.Errorf("chat: refusing keyring %s: %w", cfg.KeyringPath, err)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := lg.Record(ctx, kr); errors.Is(err, ledger.ErrAnchorNotSaved) {
		log.Warn("the database's ledger is recorded, but the keyring file could not be updated; a process that can write it will bring its anchor up to date", "err", err)
	} else if err != nil {
		return nil, err
	}
	if err := checkMigrated(ctx, db, dialect, lg, kr); err != nil {
		if errors.Is(err, ErrNeedsMigration) {
			return nil, fmt.Errorf("%w (run 'ward-chat migrate' once, on a database nobody else writes to)", err)
		}
		return nil, err
	}
	j, err := durability(ctx, cfg, db, dialect, kr, log)
	if err != nil {
		return nil, err
	}
	subjects, err := openSubjects(ctx, db, dialect, kr, lg, j, cfg.SubjectTTL)
	if err != nil {
		return nil, err
	}
	gate := fleetgate.New()
	st, err := newStore(db, dialect, kr, subjects, gate)
	if err != nil {
		return nil, err
	}
	if err := st.record(ctx, lg, kr, gate); err != nil {
		return nil, err
	}
	st.access = &accessLog{db: db, dialect: dialect, mac: st.cols.accessMAC, lg: lg, kr: kr}
	hasher, err := password.NewHasher(password.Policy{Pepper: kr, RequirePepper: !cfg.AllowUnpepperedHashes},
		password.NewLimiter(password.LimiterConfig{}))
	if err != nil {
		return nil, err
	}
	orig, err := newOrigins(cfg.Origins)
	if err != nil {
		return nil, err
	}
	dev, err := newDevices(kr, orig)
	if err != nil {
		return nil, err
	}
	srv, err := newServer(st, hasher, StandInAssistant{}, cfg.Limits.withDefaults(), cfg.TrustedProxies, orig, dev, log, cfg.Recovery)
	if err != nil {
		return nil, err
	}
	if len(cfg.AssistantWorker) > 0 {
		if srv.worker, err = NewWorker(cfg.AssistantWorker, 0); err != nil {
			return nil, err
		}
	}
	svc := &Service{cfg: cfg, db: db, dialect: dialect, kr: kr, ledger: lg, store: st, server: srv, log: log, journal: j}
	if err := svc.follow(ctx, gate); err != nil {
		return nil, err
	}
	svc.auditAccessAtStart(ctx)
	return svc, nil
}

// record gives the store what the ledger records for it — row MACs, the
// users' blind index, the schema's forms — and records the columns a fleet
// rotation re-encrypts (ward keyring rotate --db). Pending sign-ups live a
// day and are left to expire; password hashes are recorded too, so that a
// keyring key that peppers one is not retired (ward keyring retire).
func (st *store) record(ctx context.Context, lg *ledger.Ledger, kr *keyring.Keyring, gate *fleetgate.Gate) error {
	if err := st.cols.rowMACs(ctx, lg, kr, gate); err != nil {
		return err
	}
	if err := st.openEmailIndex(ctx, lg, kr, gate); err != nil {
		return err
	}
	if err := openSchemaForms(ctx, lg, kr, st.cols); err != nil {
		return err
	}
	c := st.cols
	err := lg.RecordColumns(ctx, kr, ledger.ColumnOf(c.email, "id"), ledger.ColumnOf(c.title, "id"), ledger.ColumnOf(c.body, "id"),
		ledger.ColumnOf(c.outboxTo, "id"), ledger.ColumnOf(c.outboxBody, "id"),
		ledger.Column{Table: "users", Column: "password", Key: "id", Kind: ledger.KindPasswordHash})
	if err != nil && !errors.Is(err, ledger.ErrAnchorNotSaved) {
		return err
	}
	return nil
}

// follow makes the service a member of its fleet from Open to Close: it
// follows the keyring file (another process's rotation is picked up
// within keyringPoll without a signal; SIGHUP still reloads at once) and
// registers, so that a fleet rotation waits until it holds a new key and
// forms open only once it reads them.
func (s *Service) follow(ctx context.Context, gate *fleetgate.Gate) error {
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	poll := s.cfg.KeyringPoll
	if poll <= 0 {
		poll = keyringPoll
	}
	if err := s.kr.Watch(life, poll, func(err error) { s.log.Warn("keyring re-read failed", "err", err) }); err != nil {
		stop()
		return err
	}
	m, err := joinFleet(ctx, s, gate)
	if err != nil {
		stop()
		return err
	}
	go s.store.emails.Watch(life, poll, func(err error) { s.log.Warn("blind index re-read failed", "err", err) })
	s.anchored = make(chan struct{})
	go s.anchorAccessEvery(life, s.cfg.AccessAnchorEvery)
	s.member, s.stop, s.gate = m, stop, gate
	return nil
}

// ErrNoDatabase means the SQLite file the configuration names does not
// exist: only Init creates the database.
var ErrNoDatabase = errors.New("chat: no database (run 'ward-chat init' to create one, or check --db)")

// openDB opens the service's database; only Init (create) makes a SQLite
// file, so a mistyped path is an error, not a new empty database.
func openDB(url string, create ...bool) (*sql.DB, field.Dialect, error) {
	u, err := dburl.Parse(url)
	if err != nil {
		return nil, 0, err
	}
	var db *sql.DB
	if len(create) > 0 && create[0] {
		db, err = u.Create()
	} else {
		db, err = u.Open()
	}
	if errors.Is(err, dburl.ErrNoDatabase) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNoDatabase, u.Path)
	}
	if err != nil {
		return nil, 0, err
	}
	d, err := field.ParseDialect(u.Driver)
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, d, nil
}

// Handler returns the service's HTTP handler (API and web page), with
// its security headers and request checks.
func (s *Service) Handler() http.Handler { return s.server.handler() }

// Close closes the database.
func (s *Service) Close() error {
	if s.member != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.member.Leave(ctx) // a clean exit leaves the registry
		s.stop()
		<-s.anchored // the last anchor of the access log, in the loop's end
		cancel()
	}
	if s.server.worker != nil {
		s.server.worker.Close()
	}
	if s.journal != nil {
		s.journal.Close()
	}
	return s.db.Close()
}

// SweepSessions deletes expired sessions, expired sign-up links and
// outbox messages older than a link lives; Serve runs it every minute.
func (s *Service) SweepSessions(ctx context.Context) (int64, error) {
	now := time.Now()
	if err := s.store.sweepSignups(ctx, now); err != nil {
		return 0, err
	}
	if _, err := s.store.sweepForgotten(ctx, 10_000); err != nil {
		return 0, err
	}
	return s.store.sweepSessions(ctx, now)
}
