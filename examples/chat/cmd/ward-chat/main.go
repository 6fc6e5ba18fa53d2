// Command ward-chat runs the example chat service (package chat): a chat
// with an assistant whose messages, titles and e-mail addresses are sealed
// in the application, bound to their rows and owners, under a keyring
// sealed by a master key or a KMS key, so that people with database access
// cannot read or re-point them while the user and the assistant can.
//
//	ward-chat init                      # create the keyring and the database
//	ward-chat [serve] [--listen 127.0.0.1:8080]
//	ward-chat inspect-db                # what an operator sees (no keyring needed)
//	ward-chat rotate                    # rotate across every running instance, then re-encrypt
//	ward-chat access-audit              # check the users' access log against its anchor
//	kill -HUP <pid of serve>            # reload the keyring at once and re-encrypt
//
// It follows ward's conventions: --db, --keyring, --kms or the master key
// from WARD_MASTER_KEY / --master-key-file; errors on stderr as
// "ward-chat: error: …" with a "hint:" line; exit code 2 for errors.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	wardotel "github.com/wardlab/ward/contrib/otel"
	"github.com/wardlab/ward/dburl"
	"github.com/wardlab/ward/fleet"
	_ "github.com/wardlab/ward/kms/awskms" // registers awskms://
	"github.com/wardlab/ward/observe"

	"github.com/wardlab/ward/examples/chat"
	"github.com/wardlab/ward/keyring"
	"github.com/wardlab/ward/kms"
	"github.com/wardlab/ward/kms/kmsurl"
	"github.com/wardlab/ward/kms/local"
	"github.com/wardlab/ward/ledger"
)

func main() {
	// SIGTERM (systemd, Docker, Kubernetes) and Ctrl-C stop the service
	// cleanly: requests in flight drain, and it leaves the fleet.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// hinted is an error with a hint line.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

type options struct {
	db, keyring, kms, masterKeyFile, listen string
	forgetJournal                           string
	trusted, origins                        []string
	allowUnpeppered                         bool
	recovery, noForgetJournal               bool
	onKeyUsage                              func([]fleet.KeyUsage) // the metrics' (contrib/otel), when on
	assistantWorker                         string
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The databases' passwords are scrubbed from everything printed,
	// drivers' messages included, as in ward.
	secrets := dburl.CommandSecrets(args, os.Getenv)
	stdout, stderr = dburl.Scrub(stdout, secrets), dburl.Scrub(stderr, secrets)
	dburl.LogDriverTo(stderr)
	// Metrics and traces of what ward does, as the OTEL_* environment
	// asks (OTEL_METRICS_EXPORTER=console|otlp|none, OTEL_TRACES_EXPORTER
	// likewise; contrib/otel): nothing unless one is named.
	obs, shutdown, err := wardotel.Setup(ctx, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "ward-chat: error: %v\n", err)
		return 2
	}
	var o options
	if obs != nil {
		observe.Set(obs)
		defer observe.Set(nil)
		defer shutdown(context.WithoutCancel(ctx))
		o.onKeyUsage = obs.KeyUsage
	}
	root := newRoot(&o, stdout)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err = root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "ward-chat: error: %v\n", err)
	var h *hinted
	if hint := dburl.PoolerHint(err); hint != "" {
		fmt.Fprintf(stderr, "hint: %s\n", hint)
	} else if errors.As(err, &h) {
		fmt.Fprintf(stderr, "hint: %s\n", h.hint)
	}
	return 2
}

func newRoot(o *options, out io.Writer) *cobra.Command {
	serve := func(cmd *cobra.Command, _ []string) error { return o.serve(cmd.Context(), out) }
	root := &cobra.Command{
		Use:           "ward-chat",
		Short:         "The example chat service: messages encrypted in the application, bound to their owners",
		Args:          cobra.NoArgs,
		RunE:          serve,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	f := root.PersistentFlags()
	f.StringVar(&o.db, "db", "", "database: sqlite:PATH, postgres://… (password in PGPASSWORD) or a key=value DSN (default $WARD_DB, else sqlite:chat.db)")
	f.StringVar(&o.keyring, "keyring", "", "keyring file (default $WARD_KEYRING, else chat-keyring.json)")
	f.StringVar(&o.kms, "kms", "", "KMS key URL that seals the keyring (awskms://alias/NAME?region=R); default: the master key")
	f.StringVar(&o.masterKeyFile, "master-key-file", "", "file holding the base64 master key (default: the key itself, base64, in $"+local.EnvVar+")")
	f.BoolVar(&o.allowUnpeppered, "allow-unpeppered-hashes", false, "accept password hashes from before the pepper (upgraded at log-in)")
	f.BoolVar(&o.recovery, "recovery", false, "offer users who turn private mode on a recovery code (shown once), so that a password reset keeps their messages")
	f.StringVar(&o.assistantWorker, "assistant-worker", "", "command line of a process that answers for the assistant, e.g. 'python3 examples/chat/worker/assistant.py' (the Python package's worker: it gets each conversation's ciphertexts and a grant of that user's message bodies, never a private user's messages); default: in-process")
	f.StringArrayVar(&o.trusted, "trusted-proxy", nil, "CIDR of a reverse proxy whose X-Forwarded-For is believed (repeatable)")
	f.StringVar(&o.forgetJournal, "forget-journal", "", "folder outside the database where account deletions and private mode are also recorded, for 'ward ledger recover' after a failover or restore (default $WARD_FORGET_JOURNAL, else a folder beside the keyring file named after it: chat-keyring.forget-journal); it must be writable")
	f.BoolVar(&o.noForgetJournal, "no-forget-journal", false, "keep no forget journal: account deletions a failover or restore loses come back, and private mode can be switched off by deleting rows (the service warns at start)")
	f.StringArrayVar(&o.origins, "origin", nil, "public https origin browsers use, e.g. https://chat.example.com (repeatable); none: a local development service on localhost")
	root.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on")
	serveCmd := &cobra.Command{Use: "serve", Short: "Serve the chat (the default command)", Args: cobra.NoArgs, RunE: serve}
	serveCmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on")
	root.AddCommand(serveCmd,
		&cobra.Command{Use: "init", Short: "Create the keyring (it must not exist) and prepare the database", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return o.init(cmd.Context(), out) }},
		&cobra.Command{Use: "inspect-db", Short: "Show what someone with database access sees (needs no keyring)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return chat.Inspect(cmd.Context(), envOr(o.db, "WARD_DB", defaultDB), out)
			}},
		&cobra.Command{Use: "migrate", Short: "Once, on a database from before values were bound to their owners: re-bind them and MAC password hashes, trusting the rows as they are", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				cfg, err := o.config(cmd.Context())
				if err != nil {
					return err
				}
				return chat.Migrate(cmd.Context(), cfg, out)
			}},
		&cobra.Command{Use: "outbox", Short: "Print the e-mails the service would send (sign-up links), in place of a mail server", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				s, err := o.open(cmd.Context())
				if err != nil {
					return err
				}
				defer s.Close()
				ms, err := s.Outbox(cmd.Context(), 1000)
				if err != nil {
					return err
				}
				for _, m := range ms {
					fmt.Fprintf(out, "%s  to %s\n  %s\n", m.Created.Format(time.RFC3339), m.To, m.Body)
				}
				return nil
			}},
		&cobra.Command{Use: "access-audit", Short: "Check the users' access log whole against its anchor in the ledger (the service does at start)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return o.accessAudit(cmd.Context(), out) }},
		&cobra.Command{Use: "rotate", Short: "Rotate across every running instance (each picks the key up on its own), then re-encrypt", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return o.rotate(cmd.Context(), out) }})
	return root
}

// Defaults of --db and --keyring when neither the flag nor the variable
// (WARD_DB, WARD_KEYRING: the same variables as ward's) is set.
const (
	defaultDB      = "sqlite:chat.db"
	defaultKeyring = "chat-keyring.json"
)

// envOr returns v, else the environment variable env, else def.
func envOr(v, env, def string) string {
	if v == "" {
		v = os.Getenv(env)
	}
	if v == "" {
		v = def
	}
	return v
}

// journalBeside is the forget journal's default folder: beside the
// keyring file and named after it (chat-keyring.json:
// chat-keyring.forget-journal), whatever the database.
func journalBeside(keyringPath string) string {
	return strings.TrimSuffix(keyringPath, filepath.Ext(keyringPath)) + ".forget-journal"
}

func (o *options) config(ctx context.Context) (chat.Config, error) {
	o.db, o.keyring = envOr(o.db, "WARD_DB", defaultDB), envOr(o.keyring, "WARD_KEYRING", defaultKeyring)
	var ks kms.KeyService
	var err error
	if o.kms != "" {
		ks, err = kmsurl.Open(ctx, o.kms, nil)
	} else {
		ks, err = local.Load(o.masterKeyFile, nil)
		if errors.Is(err, local.ErrNoKey) {
			err = &hinted{err, "generate one with 'ward keyring gen-master-key --out FILE', then export " + local.EnvVar + "=$(cat FILE) or pass --master-key-file FILE"}
		}
	}
	if err != nil {
		return chat.Config{}, err
	}
	cfg := chat.Config{DB: o.db, KeyringPath: o.keyring, KeyService: ks, AllowUnpepperedHashes: o.allowUnpeppered, Origins: o.origins, Recovery: o.recovery,
		ForgetJournal: envOr(o.forgetJournal, "WARD_FORGET_JOURNAL", journalBeside(o.keyring)), AssistantWorker: strings.Fields(o.assistantWorker),
		OnKeyUsage: o.onKeyUsage}
	if o.noForgetJournal {
		cfg.ForgetJournal = ""
	}
	for _, c := range o.trusted {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return cfg, fmt.Errorf("--trusted-proxy: %w", err)
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, p)
	}
	return cfg, nil
}

func (o *options) open(ctx context.Context) (*chat.Service, error) {
	cfg, err := o.config(ctx)
	if err != nil {
		return nil, err
	}
	s, err := chat.Open(ctx, cfg)
	switch {
	case errors.Is(err, chat.ErrNoKeyring):
		return nil, &hinted{err, "create the keyring with 'ward-chat init', or check --keyring"}
	case errors.Is(err, chat.ErrNoDatabase):
		return nil, &hinted{err, "create the database with 'ward-chat init', or check --db: nothing was created"}
	case errors.Is(err, ledger.ErrReplayed):
		return nil, &hinted{err, "the database went back in time: a failover that lost its last commits or a restore (run 'ward ledger recover --db URL --forget-journal DIR', docs/OPERATIONS.md), or a database writer's rollback (find out who; the same command recovers)"}
	case errors.Is(err, ledger.ErrStandby):
		return nil, &hinted{err, "point --db at the primary"}
	case errors.Is(err, keyring.ErrRollback), errors.Is(err, keyring.ErrWrongKeyring), errors.Is(err, keyring.ErrUnknownKey):
		return nil, &hinted{err, "the keyring file does not match what the database holds: use the current copy of its keyring"}
	}
	return s, err
}

func (o *options) init(ctx context.Context, out io.Writer) error {
	cfg, err := o.config(ctx)
	if err != nil {
		return err
	}
	kr, err := chat.Init(ctx, cfg)
	if errors.Is(err, chat.ErrInitialised) {
		fmt.Fprintf(out, "%v (%s, %s): nothing changed\n", err, o.keyring, o.db)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "created %s (%s), primary key %v, sealed under %v; database ready\n", o.keyring, kr.ID(), kr.Primary().ID, cfg.KeyService.Key())
	return nil
}

func (o *options) serve(ctx context.Context, out io.Writer) error {
	s, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln, out)
}

func (o *options) accessAudit(ctx context.Context, out io.Writer) error {
	s, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	a, err := s.AuditAccess(ctx)
	if errors.Is(err, chat.ErrAccessBroken) {
		return &hinted{err, "entries users should see were deleted or altered in the database, or lost in a failover or restore: find out which (SECURITY.md, the access log); the service keeps recording and anchoring after the break"}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "access log intact: %d entries anchored, %d since the last anchor\n", a.Anchored, a.Unanchored)
	return nil
}

func (o *options) rotate(ctx context.Context, out io.Writer) error {
	s, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Rotate(ctx, out)
}
