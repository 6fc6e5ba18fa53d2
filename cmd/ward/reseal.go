package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wardlab/ward/fleet"
	"github.com/wardlab/ward/fleetgate"
	"github.com/wardlab/ward/internal/cli"
	"github.com/wardlab/ward/internal/sqltable"
	"github.com/wardlab/ward/ledger"
	"github.com/wardlab/ward/lifecycle"

	"github.com/spf13/cobra"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/field/reseal"
	"github.com/wardlab/ward/keyring"
)

// DBEnv names the environment variable with the default database URL; use
// it rather than --db when the URL holds a password.
const DBEnv = "WARD_DB"

// jobOptions are the flags of the column jobs, reseal and encrypt-column.
type jobOptions struct {
	gate                   *fleetgate.Gate // which forms the job's column writes (gateVersion)
	db, table, column, key string
	bind                   []string
	text, dryRun, quiet    bool
	check                  bool
	batch, workers         int
	pause                  time.Duration
	shard                  string
	rate                   float64
	fromPlaintext          bool
	asJSON                 bool
	index, indexNormalize  string
}

func (a *app) newResealCmd() *cobra.Command {
	var o jobOptions
	cmd := &cobra.Command{
		Use:   "reseal --db URL --table T --column C",
		Short: "Re-encrypt a column's values under the primary key, current format and binding",
		Long: `Re-encrypt every value of an encrypted column that is not up to date: under
an older key than the keyring's primary, in ciphertext v1, or (with --bind)
bound to its row only rather than to its bound columns. In batches, one
transaction per batch, never overwriting a row that changed since it was
read. Safe to interrupt and run again: values already up to date are
skipped. --dry-run only counts values per key ID, version and binding. Run
it after 'ward keyring rotate --no-reseal' or an interrupted rotation;
then retire the old key ('ward keyring retire').

` + jobHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.resealColumn(cmd, &o) },
	}
	jobFlags(cmd, &o)
	return cmd
}

func (a *app) newEncryptColumnCmd() *cobra.Command {
	var o jobOptions
	cmd := &cobra.Command{
		Use:   "encrypt-column --db URL --table T --column C",
		Short: "Encrypt a column that holds plaintext, online (the application runs in mixed-read mode meanwhile)",
		Long: `Encrypt every value of a column that is still plaintext, while the
application keeps running with field.AcceptPlaintext (mixed reads: old
plaintext reads as plaintext, everything written is encrypted). It shares
'ward reseal's machinery: batches, compare-and-swap, resumable after a
kill, every new value opened again before it is written. Values that parse
as ward ciphertexts are never taken for plaintext: they must open, or the
row is left unchanged and reported.

First run it with --dry-run: the census counts plaintext, ciphertexts per
key ID, and suspect values (plaintext that happens to parse as a
ciphertext, which mixed mode would refuse to show). When a later dry run
shows 0 plaintext, turn mixed mode off in the application.

` + jobHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { o.fromPlaintext = true; return a.resealColumn(cmd, &o) },
	}
	jobFlags(cmd, &o)
	return cmd
}

const jobHelp = `Scale: --workers N processes batches in parallel; --shard I/N takes this
process's share of the table (key ranges for integer keys, hash buckets for
text keys) so that N processes or machines split a job, each crash-safe on
its own; --rate caps rows per second so live traffic keeps its latency.

Databases: postgres://USER@HOST/DB (password via $WARD_DB or PGPASSWORD, not
argv) and sqlite:PATH.`

func jobFlags(cmd *cobra.Command, o *jobOptions) {
	f := cmd.Flags()
	f.StringVar(&o.db, "db", "", "database URL (default $"+DBEnv+")")
	f.StringVar(&o.table, "table", "", "table name")
	f.StringVar(&o.column, "column", "", "encrypted column")
	f.StringVar(&o.key, "key", "id", "primary-key column (the row key in each value's context)")
	f.StringArrayVar(&o.bind, "bind", nil, "a bound column (field.Bind), repeated in order: values are re-bound to them")
	f.BoolVar(&o.text, "text", false, "the column stores the text form (TEXT columns)")
	f.BoolVar(&o.dryRun, "dry-run", false, "count values per key ID, version, binding and plaintext; change nothing")
	f.BoolVar(&o.check, "check", false, "a deploy gate: count as --dry-run, exit 1 unless nothing is left to do")
	f.IntVar(&o.batch, "batch", 500, "rows per transaction")
	f.IntVar(&o.workers, "workers", 1, "batches processed in parallel")
	f.StringVar(&o.shard, "shard", "", "this process's share, I/N (0 <= I < N); /N takes I from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
	f.Float64Var(&o.rate, "rate", 0, "at most this many rows per second (0: no limit)")
	f.DurationVar(&o.pause, "pause", 0, "sleep between batches, to limit load")
	f.BoolVar(&o.quiet, "quiet", false, "no progress output")
	f.BoolVar(&o.asJSON, "json", false, "print JSON (schema in docs/CLI.md): the census with --dry-run or --check, else what the job did; progress stays on stderr")
	f.StringVar(&o.index, "index", "", "a blind-index column of the table to write with each value, and to fill in where missing")
	f.StringVar(&o.indexNormalize, "index-normalize", "", "with --index, required unless the ledger records the index (then it is read from there): the index's normalisation, as the application's field.NewBlindIndex computes it: nfc (the library's default, field.NormalizeNFC) or fold (field.NormalizeFold: case-folded)")
}

// JobIndexEnv is the variable a Kubernetes Indexed Job sets in each pod:
// '--shard /N' takes its index from it.
const JobIndexEnv = "JOB_COMPLETION_INDEX"

// parseShard parses "I/N", or "/N" with I from $JOB_COMPLETION_INDEX.
func (a *app) parseShard(s string) (i, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if strings.HasPrefix(s, "/") {
		idx := a.getenv(JobIndexEnv)
		if idx == "" {
			return 0, 0, fmt.Errorf("--shard %q takes its index from $%s, which is not set (a Kubernetes Indexed Job sets it)", s, JobIndexEnv)
		}
		s = idx + s
	}
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 0 <= I < N", s)
	}
	return i, n, nil
}

// resealColumn runs the column job o describes: a reseal, or with
// fromPlaintext an encrypt-column.
func (a *app) resealColumn(cmd *cobra.Command, o *jobOptions) error {
	if o.db == "" {
		o.db = a.getenv(DBEnv)
	}
	if o.db == "" || o.table == "" || o.column == "" {
		return cli.Usage(errors.New("--db, --table and --column are required"), "")
	}
	shard, shards, err := a.parseShard(o.shard)
	if err != nil {
		return cli.Usage(err, "")
	}
	kr, err := a.loadKeyring(cmd)
	if err != nil {
		return err
	}
	db, dialect, err := openDB(o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	col, err := jobColumn(kr, o)
	if err != nil {
		return cli.Usage(err, "")
	}
	if err := tableExists(cmd.Context(), db, o.table); err != nil {
		return err
	}
	// The ledger: another database's keyring, an older copy or one that
	// lacks a key the values use is refused before anything is written.
	lg := &ledgers{urls: []string{o.db}, dbs: []*sql.DB{db}, l: []*ledger.Ledger{{DB: db, Dialect: dialect}}}
	ledgerErr := lg.check(cmd.Context(), kr)
	if ledgerErr != nil && !(o.dryRun || o.check) {
		return interrupted(ledgerErr)
	}
	if ledgerErr != nil { // a count writes nothing: say it, and count
		fmt.Fprintf(a.stderr, "ward: warning: %v\n", ledgerErr)
	}
	if ledgerErr == nil {
		if col, err = a.subjectColumn(cmd.Context(), kr, lg, o, col); err != nil {
			return err
		}
	}
	job := &reseal.Job{DB: db, Dialect: dialect, Column: col, Key: o.key, BatchSize: o.batch, Pause: o.pause,
		FromPlaintext: o.fromPlaintext, Workers: o.workers, Shard: shard, Shards: shards, Rate: o.rate}
	if job.Index, err = a.jobIndex(cmd.Context(), kr, lg, ledgerErr == nil, o); err != nil {
		return err
	}
	job.IndexColumn = o.index
	if o.dryRun || o.check {
		// The census counts as current what the job would write: the same
		// write gate (v3 while a registered process does not read v4), or
		// --check would never pass beside such a process.
		if ledgerErr == nil {
			if err := a.gateVersion(cmd.Context(), kr, db, dialect, job, o); err != nil {
				return err
			}
		}
		if err := a.census(cmd.Context(), kr, job, o); err != nil {
			return err
		}
		if err := a.uniqueness(cmd.Context(), job, true); err != nil || !o.check || ledgerErr != nil {
			return err
		}
		return a.rechecked(cmd.Context(), kr, lg, o.table+"."+o.column)
	}
	if err := a.uniqueness(cmd.Context(), job, false); err != nil {
		return err
	}
	if err := refuseMerges(cmd.Context(), db, dialect, job, o); err != nil {
		return err
	}
	if err := a.formsReady(cmd.Context(), kr, db, dialect, job); err != nil {
		return err
	}
	if err := a.gateVersion(cmd.Context(), kr, db, dialect, job, o); err != nil {
		return err
	}
	return a.runJob(cmd.Context(), kr, lg, job, o)
}

// gateVersion makes the job's column write ciphertext v4 only once every
// registered process reads it (a column the ledger records per subject
// already does: lifecycle.OpenColumn).
func (a *app) gateVersion(ctx context.Context, kr *keyring.Keyring, db *sql.DB, dialect field.Dialect, job *reseal.Job, o *jobOptions) error {
	if job.Column.PerSubject() {
		return nil
	}
	o.gate = (&fleet.Registry{DB: db, Dialect: dialect}).WriteGate(ctx, kr, fleetgate.Sealed(o.table, o.column))
	var err error
	if job.Column, err = jobColumn(kr, o); err != nil {
		return err
	}
	if job.Column.WriteVersion() != keyring.CurrentVersion {
		what := "writing ciphertext v3"
		if o.dryRun || o.check {
			what = "counting ciphertext v3 as current (what the job writes)"
		}
		fmt.Fprintf(a.stderr, "ward: %s: not every registered process reads v4 yet (see ward fleet)\n", what)
	}
	return nil
}

// formsReady refuses, before anything is written, a job that would write
// a form not every registered process reads: ciphertexts into a column
// that processes still read as plaintext (--from-plaintext), values under
// subjects' keys that processes open with keyring keys only.
func (a *app) formsReady(ctx context.Context, kr *keyring.Keyring, db *sql.DB, dialect field.Dialect, job *reseal.Job) error {
	var fs []fleetgate.Form
	if job.FromPlaintext {
		fs = append(fs, fleetgate.Sealed(job.Column.Table(), job.Column.Name()))
	}
	if job.Column.PerSubject() {
		fs = append(fs, fleetgate.Subject(job.Column.Table(), job.Column.Name()))
	}
	reg := &fleet.Registry{DB: db, Dialect: dialect}
	for _, f := range fs {
		unknown, err := reg.Ready(ctx, kr, f)
		var nr *fleet.FormNotReadyError
		if errors.As(err, &nr) {
			return cli.Failed(err, "nothing was written")
		}
		if err != nil {
			return err
		}
		if len(unknown) > 0 {
			fmt.Fprintf(a.stderr, "ward: warning: %d registered processes declare no forms (a release from before forms, or no gate: %s): ward cannot tell whether they read %s\n",
				len(unknown), processNames(unknown), f)
		}
	}
	return nil
}

// uniqueness refuses, before anything is written, an encryption of a
// column a unique index keeps unique with nothing to take over from it
// (reseal.Job.CheckUnique); a dry run says the job would refuse.
func (a *app) uniqueness(ctx context.Context, job *reseal.Job, dry bool) error {
	err := job.CheckUnique(ctx)
	if !errors.Is(err, reseal.ErrUniquenessLost) {
		return err
	}
	if dry {
		fmt.Fprintf(a.stderr, "ward: the migration would be refused: %v\n", err)
		return nil
	}
	return cli.Failed(err, "nothing was written; see docs/ADOPTING.md, \"Unique columns\"")
}

// refuseMerges refuses, before anything is written, a blind index whose
// normalisation would merge values a unique index of the table keeps
// apart (case folding on a case-sensitive UNIQUE e-mail column): the
// migration would succeed, and a unique index on the blind index fail
// later, or lookups find the wrong row.
func refuseMerges(ctx context.Context, db *sql.DB, dialect field.Dialect, job *reseal.Job, o *jobOptions) error {
	if job.Index == nil {
		return nil
	}
	uniq, err := sqltable.UniqueIndexes(ctx, db, dialect.String(), o.table)
	if err != nil {
		return err
	}
	var keeping []string
	for _, u := range uniq {
		if slices.Contains(u.Columns, o.column) || slices.Contains(u.Columns, o.index) {
			keeping = append(keeping, u.Name)
		}
	}
	if len(keeping) == 0 {
		return nil
	}
	m, err := job.IndexMerges(ctx)
	if err != nil || m.Groups == 0 {
		return err
	}
	return cli.Failed(fmt.Errorf("--index-normalize %s would give %d groups of distinct values in %s.%s (%d rows) the same blind index, which unique index %s keeps apart; nothing was written",
		o.indexNormalize, m.Groups, o.table, o.column, m.Rows, strings.Join(keeping, ", ")),
		"use the normalisation the application's lookups use (nfc keeps them apart); to fold, merge or rename those rows first")
}

// rechecked takes a column that passed --check off the list a recovery
// left in the ledger (the columns whose values may have gone back).
func (a *app) rechecked(ctx context.Context, kr *keyring.Keyring, lg *ledgers, name string) error {
	st, err := lg.l[0].Verified(ctx, kr)
	if err != nil || st == nil || !slices.Contains(st.Recheck, name) {
		return err
	}
	if err := lg.l[0].Rechecked(ctx, kr, name); err != nil {
		return fmt.Errorf("taking %s off the ledger's list to check: %w", name, err)
	}
	fmt.Fprintf(a.stderr, "ward: %s is done again since the recovery: taken off the ledger's list\n", name)
	return nil
}

// subjectColumn returns the column as the ledger records it when the
// application seals it per subject (field.PerSubject), with its subjects'
// keys; otherwise col.
func (a *app) subjectColumn(ctx context.Context, kr *keyring.Keyring, lg *ledgers, o *jobOptions, col *field.Column) (*field.Column, error) {
	st, err := lg.l[0].Read(ctx)
	if err != nil || st == nil {
		return col, nil
	}
	for _, c := range st.Columns {
		if c.Table == o.table && c.Column == o.column && c.Subject != "" {
			if col, err = lifecycle.OpenColumn(ctx, kr, lg.databases()[0], c); err != nil {
				return nil, err
			}
			fmt.Fprintf(a.stderr, "ward: %s.%s is sealed per subject (%s/%s, bound to %s): using the ledger's record of it\n", o.table, o.column, c.Namespace, c.Subject, strings.Join(c.Bind, ", "))
		}
	}
	return col, nil
}

// jobIndex is the blind index --index fills in, or nil: as the verified
// ledger records it (recordedIndex), or else a v1 index whose
// normalisation must be named: an index computed otherwise than the
// application computes it finds nothing, silently.
func (a *app) jobIndex(ctx context.Context, kr *keyring.Keyring, lg *ledgers, verified bool, o *jobOptions) (*field.BlindIndex, error) {
	if o.index == "" {
		return nil, nil
	}
	if verified {
		st, err := lg.l[0].Verified(ctx, kr)
		if err != nil {
			return nil, err
		}
		for _, x := range stateIndexes(st) {
			if x.Table == o.table && x.Column == o.column && (x.Index == o.index || x.Spare == o.index) {
				return a.recordedIndex(kr, st.Database, x, o)
			}
		}
	}
	var opts []field.IndexOption
	switch o.indexNormalize {
	case "fold":
		opts = append(opts, field.WithNormalizer(field.NormalizeFold))
	case "nfc":
	case "none": // the name it had, for what is the library's NFC
		a.deprecated("--index-normalize none", "it meant NFC, the library's default: say --index-normalize nfc")
	case "":
		return nil, cli.Usage(errors.New("--index needs --index-normalize"), "nfc if the application calls field.NewBlindIndex without WithNormalizer, fold if it passes field.NormalizeFold")
	default:
		return nil, cli.Usage(fmt.Errorf("--index-normalize %q", o.indexNormalize), "nfc or fold, as the application's field.NewBlindIndex")
	}
	return field.NewBlindIndex(kr, o.table, o.column, opts...)
}

// stateIndexes returns the indexes a ledger records (none without one).
func stateIndexes(st *ledger.State) []ledger.IndexColumn {
	if st == nil {
		return nil
	}
	return st.Indexes
}

// recordedIndex is the blind index the ledger records in x, as the
// application computes it (v1, or v2 under its epoch and bound to the
// database): an index the job computed otherwise would match nothing the
// application looks up, and would collide with nothing it writes.
func (a *app) recordedIndex(kr *keyring.Keyring, database string, x ledger.IndexColumn, o *jobOptions) (*field.BlindIndex, error) {
	if x.Rekey != nil {
		return nil, cli.Failed(fmt.Errorf("blind index %s of %s.%s is being re-keyed (phase %q): nothing was written", x.Name, x.Table, x.Column, x.Rekey.Phase),
			"finish the re-key first: 'ward keyring reindex --db URL --table "+x.Table+" --column "+x.Column+"'")
	}
	if cur, _ := x.Columns(); cur != o.index {
		return nil, cli.Usage(fmt.Errorf("%s is the spare column of blind index %s of %s.%s, which is in %s", o.index, x.Name, x.Table, x.Column, cur), "--index "+cur)
	}
	norm, err := field.ParseNormalizer(x.Normalizer, x.NormalizerVersion)
	if err != nil {
		return nil, cli.Failed(fmt.Errorf("blind index %s of %s.%s is computed with the application's own normaliser %q: %w", x.Name, x.Table, x.Column, x.Normalizer, err),
			"let the application fill it in (it computes its own normaliser)")
	}
	if o.indexNormalize != "" && o.indexNormalize != norm.Name && !(o.indexNormalize == "none" && norm.Name == field.NFC.Name) {
		return nil, cli.Usage(fmt.Errorf("--index-normalize %s, but the ledger records blind index %s of %s.%s as %s", o.indexNormalize, x.Name, x.Table, x.Column, norm.Name), "leave --index-normalize out: the ledger's record is used")
	}
	o.indexNormalize = norm.Name
	if x.Epoch == 0 {
		fmt.Fprintf(a.stderr, "ward: blind index %s of %s.%s: v1 (%s), as the ledger records it\n", x.Name, x.Table, x.Column, norm.Name)
	} else {
		fmt.Fprintf(a.stderr, "ward: blind index %s of %s.%s: v2 under epoch %v (%s), as the ledger records it\n", x.Name, x.Table, x.Column, x.Epoch, norm.Name)
	}
	return x.Compute(kr, database, norm, x.Epoch)
}

// census prints the job's census (--dry-run, --check); with --check it
// fails unless the column is done.
func (a *app) census(ctx context.Context, kr *keyring.Keyring, job *reseal.Job, o *jobOptions) error {
	name := o.table + "." + o.column
	c, err := job.Count(ctx)
	if err != nil {
		return err
	}
	if o.asJSON {
		if err := a.writeJSON(censusJSON(kr, name, c)); err != nil {
			return err
		}
	} else {
		a.printCensus(kr, name, c, o.bind != nil, o.text)
	}
	if err := plaintextLeft(name, c, o); err != nil {
		return err
	}
	if o.check && !c.Done() {
		return cli.Failed(fmt.Errorf("%s is not done: %d plaintext, %d damaged, %d suspect, %d of %d values to re-seal", name, c.Plaintext, c.Damaged, c.Suspect,
			c.Rows-c.Null-c.Current-c.Plaintext-c.Damaged, c.Rows-c.Null), "run the job without --check, then check again")
	}
	return nil
}

// runJob records the primary and the column in the ledger, then runs the
// job with a progress bar and prints what it did.
func (a *app) runJob(ctx context.Context, kr *keyring.Keyring, lg *ledgers, job *reseal.Job, o *jobOptions) error {
	name := o.table + "." + o.column
	if err := lg.record(ctx, kr); err != nil { // before any value is sealed under the primary
		return err
	}
	// The column, so that a fleet rotation ('ward keyring rotate --db')
	// re-encrypts it.
	if err := lg.l[0].RecordColumns(ctx, kr, ledger.ColumnOf(job.Column, o.key)); err != nil {
		return fmt.Errorf("recording %s.%s in the ledger: %w", o.table, o.column, err)
	}
	verb := "re-encrypting "
	if o.fromPlaintext {
		verb = "encrypting "
	}
	bar := cli.NewProgress(a.stderr, verb+name, 1, o.quiet)
	job.Progress = func(p reseal.Progress) { bar.Set(p.Scanned, max(p.Total, p.Scanned)) }
	restoreGC := a.jobGC()
	st, err := job.Run(ctx)
	restoreGC()
	bar.Finish()
	a.reportUsage(ctx, kr, lg)
	if o.asJSON {
		a.writeJSON(jobDoc{Column: name, Key: kr.Primary().ID.String(), Written: st.Resealed, Plaintext: st.Plaintext, Current: st.Current,
			Null: st.Null, Conflicts: st.Conflicts, Failed: st.Failed, Passes: st.Passes, Workers: max(1, o.workers), Indexed: st.Indexed,
			UserHeld: st.UserHeld, Erased: st.Erased, Error: errText(err)})
	} else {
		a.printJob(kr, job, name, st, o)
	}
	if errors.Is(err, reseal.ErrJobRunning) {
		return cli.Usage(err, "another job works on this column: wait for it to finish, or run again once it stops (a dead job's lock is taken over)")
	}
	if errors.Is(err, reseal.ErrUnreadableRows) {
		if c, cerr := job.Count(ctx); cerr == nil {
			if perr := plaintextLeft(name, c, o); perr != nil {
				return perr
			}
		}
		if errors.Is(st.FirstFailure, reseal.ErrTooLong) {
			return cli.Failed(err, "the rows that failed are unchanged; '--dry-run' says how wide the column must be: widen it, then run again")
		}
		return cli.Failed(err, "the rows that failed are unchanged; check '--dry-run' for damaged values, keys missing from the keyring and suspect values")
	}
	return interrupted(err)
}

// tableExists refuses a --table the database lacks, before anything reads
// its columns (a mistyped table would otherwise read as a missing key
// column).
func tableExists(ctx context.Context, db *sql.DB, table string) error {
	t, err := field.QuoteIdent(table)
	if err != nil {
		return cli.Usage(err, "")
	}
	if _, err := db.ExecContext(ctx, `SELECT 1 FROM `+t+` WHERE 1 = 0`); sqltable.Missing(err) {
		return cli.Usage(fmt.Errorf("no table %s in the database", table), "check --table (and --db)")
	}
	return nil
}

// plaintextLeft refuses, for 'ward reseal', a column that holds plaintext:
// reseal moves ciphertexts only; 'ward encrypt-column' encrypts.
func plaintextLeft(name string, c reseal.Census, o *jobOptions) error {
	if o.fromPlaintext || c.Plaintext == 0 {
		return nil
	}
	what := fmt.Sprintf("%d of its %d values are", c.Plaintext, c.Rows-c.Null)
	if c.Plaintext == c.Rows-c.Null {
		what = "every value is"
	}
	return cli.Failed(fmt.Errorf("%s holds plaintext (%s not encrypted): 'ward reseal' re-encrypts ciphertexts only", name, what),
		"encrypt the column with 'ward encrypt-column' and the same flags (it re-encrypts older ciphertexts too)")
}

func jobColumn(kr *keyring.Keyring, o *jobOptions) (*field.Column, error) {
	enc := field.Binary
	if o.text {
		enc = field.Text
	}
	opts := []field.ColumnOption{field.WithEncoding(enc), field.WithForms(o.gate)}
	if o.bind != nil {
		opts = append(opts, field.Bind(o.bind...))
	}
	return field.NewColumn(kr, o.table, o.column, opts...)
}

// printWidths prints what the longest value needs once sealed against
// what the column holds, and how many would not fit.
func (a *app) printWidths(c reseal.Census, text bool) {
	if c.Longest == 0 {
		return
	}
	unit, holds := "bytes", "any length"
	if text {
		unit = "characters"
	}
	if c.Width > 0 {
		holds = strconv.FormatInt(c.Width, 10)
	}
	fmt.Fprintf(a.stdout, "  sealed, the longest value takes %d %s (the column holds %s)\n", c.Longest, unit, holds)
	if c.TooLong > 0 {
		fmt.Fprintf(a.stdout, "  %d values would not fit the column once sealed: widen it to at least %d %s first (the job leaves them as they are and fails them)\n", c.TooLong, c.Longest, unit)
	}
}

// printCensus prints a dry run's counts.
// printJob prints what a job did.
func (a *app) printJob(kr *keyring.Keyring, job *reseal.Job, name string, st reseal.Stats, o *jobOptions) {
	fmt.Fprintf(a.stdout, "%s: %d written under %v (%d of them plaintext), %d already up to date, %d NULL, %d conflicts, %d failed (%d passes, %d workers)\n",
		name, st.Resealed, kr.Primary().ID, st.Plaintext, st.Current, st.Null, st.Conflicts, st.Failed, st.Passes, max(1, o.workers))
	if job.Index != nil {
		fmt.Fprintf(a.stdout, "%s: blind index %s written with every value (%d rows only needed their index)\n", name, o.index, st.Indexed)
	}
	if st.UserHeld > 0 || st.Erased > 0 {
		fmt.Fprintf(a.stdout, "%s: skipped %d rows of private subjects (their users' next log-in seals them) and %d of forgotten subjects (delete those rows)\n", name, st.UserHeld, st.Erased)
	}
}

// censusDoc is the JSON of a census (--dry-run --json), documented in
// docs/CLI.md.
type censusDoc struct {
	Column        string         `json:"column"`
	Rows          int            `json:"rows"`
	Null          int            `json:"null"`
	Plaintext     int            `json:"plaintext"`
	Damaged       int            `json:"damaged"`
	Width         int64          `json:"width"`
	Longest       int64          `json:"longest"`
	TooLong       int            `json:"too_long"`
	Suspect       int            `json:"suspect"`
	Current       int            `json:"current"`
	IndexMissing  int            `json:"index_missing"`
	SubjectSealed int            `json:"subject_sealed"`
	LegacyBinding int            `json:"legacy_binding"`
	PerKey        []keyCount     `json:"per_key"`
	PerVersion    map[string]int `json:"per_version"`
	Done          bool           `json:"done"`
}

// keyCount is the values under one key, with the key's state in the
// keyring ("not in keyring" for an unknown key).
type keyCount struct {
	ID     string `json:"id"`
	State  string `json:"state"`
	Values int    `json:"values"`
}

func censusJSON(kr *keyring.Keyring, name string, c reseal.Census) censusDoc {
	d := censusDoc{Column: name, Rows: c.Rows, Null: c.Null, Plaintext: c.Plaintext, Damaged: c.Damaged, Width: c.Width, Longest: c.Longest, TooLong: c.TooLong, Suspect: c.Suspect, Current: c.Current,
		IndexMissing: c.IndexMissing, SubjectSealed: c.SubjectSealed, LegacyBinding: c.LegacyBinding, PerKey: []keyCount{},
		PerVersion: map[string]int{}, Done: c.Done()}
	for _, id := range slices.Sorted(maps.Keys(c.PerKey)) {
		state := "not in keyring"
		if info, ok := kr.Lookup(id); ok {
			state = info.State.String()
		}
		d.PerKey = append(d.PerKey, keyCount{ID: id.String(), State: state, Values: c.PerKey[id]})
	}
	for v, n := range c.PerVersion {
		d.PerVersion[fmt.Sprintf("v%d", v)] = n
	}
	return d
}

// jobDoc is the JSON of a finished job (--json), documented in
// docs/CLI.md.
type jobDoc struct {
	Column    string `json:"column"`
	Key       string `json:"key"` // the primary key values were written under
	Written   int    `json:"written"`
	Plaintext int    `json:"plaintext"` // of the written, how many were plaintext
	Current   int    `json:"current"`
	Null      int    `json:"null"`
	Conflicts int    `json:"conflicts"`
	Failed    int    `json:"failed"`
	Passes    int    `json:"passes"`
	Workers   int    `json:"workers"`
	Indexed   int    `json:"indexed"`
	UserHeld  int    `json:"user_held"`
	Erased    int    `json:"erased"`
	Error     string `json:"error,omitempty"`
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (a *app) printCensus(kr *keyring.Keyring, name string, c reseal.Census, bound, text bool) {
	fmt.Fprintf(a.stdout, "%s: %d rows, %d NULL, %d plaintext, %d suspect, %d up to date\n", name, c.Rows, c.Null, c.Plaintext, c.Suspect, c.Current)
	a.printWidths(c, text)
	if c.Damaged > 0 {
		fmt.Fprintf(a.stdout, "  %d damaged values: ciphertexts of this keyring cut short or altered, never taken for plaintext (restore them from a backup, or delete them)\n", c.Damaged)
	}
	if c.IndexMissing > 0 {
		fmt.Fprintf(a.stdout, "  %d encrypted values lack their blind index (filled in by the job)\n", c.IndexMissing)
	}
	for _, id := range slices.Sorted(maps.Keys(c.PerKey)) {
		state := "not in keyring"
		if info, ok := kr.Lookup(id); ok {
			state = info.State.String()
		}
		fmt.Fprintf(a.stdout, "  key %v (%s): %d values\n", id, state, c.PerKey[id])
	}
	if c.SubjectSealed > 0 {
		fmt.Fprintf(a.stdout, "  under their subject's own key: %d values\n", c.SubjectSealed)
	}
	for _, v := range slices.Sorted(maps.Keys(c.PerVersion)) {
		fmt.Fprintf(a.stdout, "  ciphertext v%d: %d values\n", v, c.PerVersion[v])
	}
	if bound {
		fmt.Fprintf(a.stdout, "  bound to the row only (v1 binding): %d\n", c.LegacyBinding)
	}
	switch {
	case c.Suspect > 0 && c.Suspect == c.Rows-c.Null:
		fmt.Fprintf(a.stdout, "  every value is suspect: is this the keyring of this database (--keyring, the key service), and are --key and --bind the columns the application binds, in its order?\n")
	case c.Suspect > 0:
		fmt.Fprintf(a.stdout, "  %d values parse as ciphertexts but are not this column's (unknown key or context): fix them before mixed mode or a rotation\n", c.Suspect)
	}
	if c.Done() {
		fmt.Fprintln(a.stdout, "  done: no plaintext, everything under the primary key, current format and binding")
	}
}

// interrupted turns a cancelled context (Ctrl-C, SIGTERM) into the
// message that says what to do; other errors pass through.
func interrupted(err error) error {
	if errors.Is(err, context.Canceled) {
		return &cli.Error{Code: cli.ExitUsage, Err: errors.New("interrupted: every row written is complete; run again to resume"),
			Hint: "the same command continues where it stopped"}
	}
	return err
}
