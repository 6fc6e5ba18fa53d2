package io.github.wardlab.ward;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * This JVM process's registration in a database's process registry
 * ({@code ward_fleet}; FORMAT.md, "Process registry"), as Go's
 * {@code fleet.Member}: the keyring's generation and the keys it holds,
 * and the forms it reads, heartbeaten every {@link #DEFAULT_HEARTBEAT},
 * so that {@code ward keyring rotate --db} waits until this process holds
 * a new key before any process seals under it, and a form (ciphertext v4,
 * a column's sealing, integrity records v2) opens only once this process
 * reads it. {@link #close} leaves on a clean exit (a shutdown hook, or the
 * application's lifecycle); a process that dies without leaving stops
 * blocking once its heartbeat is older than the rotation's
 * {@code --stale-after}.
 *
 * <p>Rows are MAC'd as Go's are: v2 (bound to the database, under the
 * primary key's integrity epoch) once the fleet opened {@code
 * integrity:v2}, else v1. A JVM process holds the keys of the keyring file
 * it loaded: a rotation waits for it until it restarts with the new file.
 *
 * <p>Unlike a Go member it never writes the ledger: it does not join the
 * wait of a form it lacks, it refuses to join while such a wait runs or
 * once such a form is open ({@link WardException.FormsMissing}); a form
 * that opens later without it (it was never declared here) is reported to
 * {@code onError} at the next heartbeat. It joins only a database whose
 * ledger verifies, and never a PostgreSQL standby.
 */
public final class FleetMember implements AutoCloseable {
    /** The registry's table, as Go's {@code fleet.DefaultTable}. */
    public static final String DEFAULT_TABLE = "ward_fleet";
    /** How often a member reports what it holds, as Go's {@code fleet.DefaultHeartbeat}. */
    public static final Duration DEFAULT_HEARTBEAT = Duration.ofSeconds(2);
    /** The form of ciphertext v3, which ward-java reads. */
    public static final String CIPHERTEXT_V3 = "ciphertext:v3";
    /** The form of integrity records v2 (registry rows, row MACs, tombstones bound to their database). */
    public static final String INTEGRITY_V2 = "integrity:v2";
    /** The forms every ward-java process reads: ciphertext v3 and v4, and integrity records v2. */
    public static final List<String> READS = List.of(CIPHERTEXT_V3, LedgerState.CIPHERTEXT_V4, INTEGRITY_V2);

    private static final Pattern IDENT = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");
    private static final Pattern FORM = Pattern.compile("(sealed|subject|password|ciphertext|integrity):[!-+\\--~]{1,190}");

    private final DataSource db;
    private final Keyring keyring;
    private final String table;
    private final String ledgerTable;
    private final String keysCol;
    private final List<String> base; // what it declared at join
    private volatile List<String> forms; // and the re-key phases it follows
    private final List<Indexer> followed = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final Consumer<WardException> onError;
    private final String id;
    private final String host;
    private final long started;
    private final ScheduledExecutorService beats;
    private volatile LedgerState ledger;
    private volatile boolean leaving;

    private FleetMember(DataSource db, Keyring keyring, String table, String ledgerTable, String product, List<String> forms,
            Consumer<WardException> onError) {
        this.db = db;
        this.keyring = keyring;
        this.table = table;
        this.ledgerTable = ledgerTable;
        this.keysCol = product.contains("mysql") || product.contains("mariadb") ? "`keys`" : "\"keys\"";
        this.base = forms;
        this.forms = forms;
        this.onError = onError;
        byte[] b = new byte[8];
        new SecureRandom().nextBytes(b);
        this.id = "p-" + HexFormat.of().formatHex(b);
        this.host = hostName();
        this.started = System.currentTimeMillis();
        this.beats = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "ward-fleet-heartbeat");
            t.setDaemon(true);
            return t;
        });
    }

    /** Joins with the default table, ledger and heartbeat, reading {@link #READS} and forms. */
    public static FleetMember join(DataSource db, Keyring keyring, Collection<String> forms, Consumer<WardException> onError) {
        return join(db, keyring, DEFAULT_TABLE, Ledger.DEFAULT_TABLE, forms, DEFAULT_HEARTBEAT, onError);
    }

    /**
     * Registers this process in db's registry table (created if missing),
     * reading {@link #READS} and forms (a column's {@code sealed:T.C} and
     * {@code subject:T.C}, {@code password:SCHEME}, …: what the process
     * reads besides), and heartbeats until {@link #close}. onError
     * receives heartbeat failures (the database down, a form opened that
     * this process lacks); the heartbeat keeps trying. A ledger that does
     * not verify, a standby, or a form this process lacks that is open or
     * waiting fails the join, typed; nothing is left registered then.
     */
    public static FleetMember join(DataSource db, Keyring keyring, String table, String ledgerTable, Collection<String> forms, Duration heartbeat,
            Consumer<WardException> onError) {
        Objects.requireNonNull(db, "db");
        Objects.requireNonNull(keyring, "keyring");
        if (!IDENT.matcher(table).matches()) {
            throw new WardException.Binding("a registry table name that is not an identifier");
        }
        if (heartbeat.toMillis() < 1) {
            throw new WardException.Binding("a heartbeat of at least a millisecond");
        }
        TreeSet<String> declared = new TreeSet<>(READS);
        for (String f : forms) {
            if (!FORM.matcher(f).matches()) {
                throw new WardException.Binding("not a form: " + Wire.clip(f, 40) + " (kind:name, printable, no commas)");
            }
            declared.add(f);
        }
        FleetMember m;
        try (Connection c = db.getConnection()) {
            String product = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
            refuseStandby(c, product);
            m = new FleetMember(db, keyring, table, ledgerTable, product, List.copyOf(declared), onError == null ? e -> {} : onError);
            m.ledger = Ledger.verify(c, keyring, ledgerTable, false);
            c.createStatement().executeUpdate(ddl(table, product, m.keysCol));
            m.insert(c);
        } catch (SQLException e) {
            throw new WardException("joining the fleet registry (" + table + "): SQLSTATE " + e.getSQLState());
        }
        try {
            m.checkForms(m.verifyLedger(), true); // after the row is in: a wait that begins later includes it
        } catch (WardException e) {
            m.leaveQuietly();
            throw e;
        }
        m.beats.scheduleWithFixedDelay(m::beatReporting, heartbeat.toMillis(), heartbeat.toMillis(), TimeUnit.MILLISECONDS);
        return m;
    }

    static String ddl(String table, String product, String keysCol) {
        boolean mysql = product.contains("mysql") || product.contains("mariadb");
        String id = mysql ? "VARBINARY(1024)" : product.contains("h2") ? "VARCHAR(1024)" : "TEXT";
        String text = mysql ? "LONGTEXT" : product.contains("h2") ? "VARCHAR(1048576)" : "TEXT";
        return "CREATE TABLE IF NOT EXISTS " + table + " (id " + id + " PRIMARY KEY, host TEXT NOT NULL, pid BIGINT NOT NULL, keyring TEXT NOT NULL,"
                + " generation BIGINT NOT NULL, " + keysCol + " " + text + " NOT NULL, started BIGINT NOT NULL, seen BIGINT NOT NULL,"
                + " exited INTEGER NOT NULL, mac TEXT NOT NULL, caps " + text + " NOT NULL" + (mysql ? "" : " DEFAULT ''") + ")";
    }

    private static void refuseStandby(Connection c, String product) throws SQLException {
        if (!product.contains("postgres")) {
            return;
        }
        try (ResultSet rs = c.createStatement().executeQuery("SELECT pg_is_in_recovery()")) {
            if (rs.next() && rs.getBoolean(1)) {
                throw new WardException("the database is a PostgreSQL standby: the fleet registers on the primary");
            }
        }
    }

    /** This process's registry ID ({@code p-} and 16 hex digits). */
    public String id() {
        return id;
    }

    /** The forms this process declares it reads, sorted: those it joined with, and the re-key phases of the indexes it follows. */
    public List<String> forms() {
        return forms;
    }

    /**
     * Follows a re-keyable blind index: from the next heartbeat on, this
     * process declares each phase of the index's re-key the ledger records
     * (Go's {@code ledger.IndexAck}), so that {@code ward keyring reindex}
     * counts it rather than waiting for it. Sound only when this process
     * writes the index's columns through x alone ({@link Indexer#write}
     * reads the phase in each write's transaction).
     */
    public FleetMember follow(Indexer x) {
        followed.add(Objects.requireNonNull(x, "x"));
        return this;
    }

    /** The forms to declare under st: those of the join, and the acknowledgements of every followed index's re-key. */
    private void declare(LedgerState st) {
        TreeSet<String> all = new TreeSet<>(base);
        for (Indexer x : followed) {
            all.addAll(x.acks(st));
        }
        forms = List.copyOf(all);
    }

    /** The row as it is now: what the keyring holds, seen now. */
    FleetRow row(boolean exited) {
        List<Long> keys = new ArrayList<>();
        for (Keyring.Key k : keyring.keys().values()) {
            if (!k.state().equals("disabled")) {
                keys.add(k.id());
            }
        }
        keys.sort(null);
        return new FleetRow(id, host, ProcessHandle.current().pid(), keyring.id(), keyring.generation(), keys, started, System.currentTimeMillis(),
                exited, forms);
    }

    /** The row's MAC text: v2 once the fleet opened integrity:v2 (as Go's rowMACs.tag), else v1. */
    String mac(FleetRow r) {
        LedgerState st = ledger;
        if (st != null && st.allows(INTEGRITY_V2)) {
            return r.macV2(keyring, keyring.primary().id(), st.database());
        }
        return r.macV1(keyring);
    }

    private void insert(Connection c) throws SQLException {
        FleetRow r = row(false);
        execute(c, "INSERT INTO " + table + " (id, host, pid, keyring, generation, " + keysCol + ", started, seen, exited, mac, caps)"
                + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)", r.id(), r.host(), r.pid(), r.keyring(), r.generation(), r.keysText(), r.started(),
                r.seen(), mac(r), r.formsText());
    }

    /** Writes the row now; whether a row was there to update. */
    private boolean write(Connection c, boolean exited) throws SQLException {
        FleetRow r = row(exited);
        return execute(c, "UPDATE " + table + " SET generation = ?, " + keysCol + " = ?, seen = ?, exited = ?, mac = ?, caps = ? WHERE id = ? AND exited = 0",
                r.generation(), r.keysText(), r.seen(), exited ? 1 : 0, mac(r), r.formsText(), id) > 0;
    }

    /** Runs one statement with its parameters; the rows it changed. */
    private static int execute(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement st = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                st.setObject(i + 1, args[i]);
            }
            return st.executeUpdate();
        }
    }

    private LedgerState verifyLedger() {
        return ledger = Ledger.verify(db, keyring, ledgerTable);
    }

    /** Refuses the forms this process lacks: open ones, and at a join waiting ones. */
    private void checkForms(LedgerState st, boolean joining) {
        TreeSet<String> lacking = new TreeSet<>();
        for (String f : st.openedForms()) {
            if (!forms.contains(f)) {
                lacking.add(f + " (open)");
            }
        }
        for (String f : joining ? st.waitingForms() : List.<String>of()) {
            if (!forms.contains(f)) {
                lacking.add(f + " (waiting)");
            }
        }
        if (!lacking.isEmpty()) {
            throw new WardException.FormsMissing("the database depends on forms this process does not declare: " + String.join(", ", lacking)
                    + " (declare them if it reads them, or run a release that does)");
        }
    }

    /**
     * Reports now what the keyring holds (the heartbeat does it on its own),
     * after reading the ledger again; registers again when the row vanished
     * (a database writer deleted it, or the database went back in time).
     * A ledger that no longer verifies (a rotation wrote it under a keyring
     * file newer than the one this process loaded: {@link
     * WardException.StaleKeyring}) is reported after the row is written
     * under the last verified state, so the rotation keeps waiting for this
     * process, and names it, until it restarts with the new file.
     */
    public void beat() {
        if (leaving) {
            return;
        }
        WardException unverified = null;
        try {
            declare(verifyLedger());
        } catch (WardException e) { // still report what the process holds, under the last verified state
            unverified = e;
        }
        try (Connection c = db.getConnection()) {
            if (!write(c, false) && !leaving) {
                reregister(c);
            }
        } catch (SQLException e) {
            throw new WardException("fleet heartbeat (" + table + "): SQLSTATE " + e.getSQLState());
        }
        if (unverified != null) {
            throw unverified;
        }
        checkForms(ledger, false);
    }

    /**
     * Writes the row again after a heartbeat updated none: a database
     * writer deleted it, or the database went back to before the process
     * joined. A row that is there after all (one left by close is never
     * revived, and a database may count only the rows an UPDATE changed) is
     * a duplicate, and nothing is written, as in Go.
     */
    private void reregister(Connection c) throws SQLException {
        try {
            insert(c);
        } catch (SQLException e) {
            if (!duplicate(e)) {
                throw e;
            }
        }
    }

    /**
     * Whether e is a unique violation: SQLSTATE class 23 (PostgreSQL,
     * MySQL, MariaDB, H2), or SQLite's SQLITE_CONSTRAINT (its driver sets no
     * SQLSTATE).
     */
    static boolean duplicate(SQLException e) {
        if (e instanceof java.sql.SQLIntegrityConstraintViolationException || (e.getSQLState() != null && e.getSQLState().startsWith("23"))) {
            return true;
        }
        return e.getClass().getName().startsWith("org.sqlite.") && (e.getErrorCode() & 0xff) == 19;
    }

    private void beatReporting() {
        try {
            beat();
        } catch (WardException e) {
            onError.accept(e);
        } catch (RuntimeException e) {
            onError.accept(new WardException("fleet heartbeat: " + e.getClass().getSimpleName()));
        }
    }

    /** Stops the heartbeat and marks the registration as exited: it no longer blocks a rotation or a form. */
    @Override
    public void close() {
        leaving = true;
        beats.shutdown();
        try {
            beats.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (Connection c = db.getConnection()) {
            write(c, true);
        } catch (SQLException e) {
            throw new WardException("leaving the fleet registry (" + table + "): SQLSTATE " + e.getSQLState());
        }
    }

    private void leaveQuietly() {
        try {
            close();
        } catch (WardException e) {
            // the join's own error says what happened
        }
    }

    /** The most registry rows a readiness check reads, as Go's: a database writer can fill the table. */
    static final int MAX_ROWS = 10_000;

    /**
     * Whether every process registered in the connection's database reads
     * form, as Go's {@code fleet.Registry.Ready} decides for a writer that is
     * not registered (the command line): the verified ledger st records it
     * open; or it records no wait for it and every live registration of
     * this keyring declares it. A row that fails its MAC, a row of a release
     * from before forms, a registry over {@value #MAX_ROWS} rows or a field
     * over its bound answer no. No registry is a fleet of none: yes.
     */
    public static boolean ready(Connection c, Keyring kr, LedgerState st, String table, String form) throws SQLException {
        if (st.allows(form)) {
            return true;
        }
        if (st.waitingForms().contains(form) || !IDENT.matcher(table).matches()) {
            return false;
        }
        String product = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
        String keysCol = product.contains("mysql") || product.contains("mariadb") ? "`keys`" : "\"keys\"";
        String sql = "SELECT " + bounded("id", 1024) + ", " + bounded("host", 1024) + ", pid, " + bounded("keyring", 1024) + ", generation, "
                + bounded(keysCol, 1 << 20) + ", started, seen, exited, " + bounded("mac", 128) + ", " + bounded("caps", 1 << 20) + " FROM " + table;
        List<String[]> rows = new ArrayList<>();
        try (java.sql.Statement q = c.createStatement()) {
            q.setMaxRows(MAX_ROWS + 1);
            try (ResultSet rs = q.executeQuery(sql)) {
                while (rs.next()) {
                    if (rows.size() == MAX_ROWS) {
                        return false;
                    }
                    String[] r = new String[11];
                    for (int i = 0; i < r.length; i++) {
                        r[i] = rs.getString(i + 1);
                    }
                    rows.add(r);
                }
            }
        } catch (SQLException e) {
            try (ResultSet t = c.getMetaData().getTables(null, null, null, new String[] {"TABLE"})) {
                while (t.next()) {
                    if (t.getString("TABLE_NAME").equalsIgnoreCase(table)) {
                        throw e; // there, and unreadable
                    }
                }
            }
            return true; // no process ever registered
        }
        for (String[] r : rows) {
            if (!kr.id().equals(r[3]) || "1".equals(r[8])) {
                continue; // another keyring's, or left
            }
            FleetRow row = parseRow(r);
            if (row == null || row.forms().isEmpty() || !row.forms().contains(form) || !macHolds(row, r[9], kr, st)) {
                return false;
            }
        }
        return true;
    }

    private static String bounded(String col, int max) {
        return "CASE WHEN LENGTH(" + col + ") > " + max + " THEN NULL ELSE " + col + " END";
    }

    /** A registry row read back, or null when a field is over its bound or malformed. */
    static FleetRow parseRow(String[] r) {
        for (int i : new int[] {0, 1, 3, 5, 9, 10}) {
            if (r[i] == null) {
                return null;
            }
        }
        try {
            List<Long> keys = new ArrayList<>();
            for (String k : r[5].isEmpty() ? new String[0] : r[5].split(",", -1)) {
                if (!k.matches("[0-9a-f]{8}")) {
                    return null;
                }
                keys.add(Long.parseLong(k, 16));
            }
            List<String> forms = r[10].isEmpty() ? List.of() : List.of(r[10].split(",", -1));
            return new FleetRow(r[0], r[1], Long.parseLong(r[2]), r[3], Long.parseLong(r[4]), keys, Long.parseLong(r[6]), Long.parseLong(r[7]),
                    "1".equals(r[8]), forms);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Whether tag is row's MAC: v2 under the epoch it names, bound to st's database; v1 unless the ledger refuses v1 rows. */
    static boolean macHolds(FleetRow row, String tag, Keyring kr, LedgerState st) {
        String want;
        if (tag.startsWith("v2:")) {
            String[] parts = tag.split(":", -1);
            if (parts.length != 3 || !parts[1].matches("[0-9a-f]{8}")) {
                return false;
            }
            try {
                want = row.macV2(kr, Long.parseLong(parts[1], 16), st.database());
            } catch (WardException e) { // an epoch this keyring does not hold: ended, or never its
                return false;
            }
        } else if (st.marks().contains("integrity:fleet-v2")) {
            return false;
        } else {
            want = row.macV1(kr);
        }
        return java.security.MessageDigest.isEqual(want.getBytes(java.nio.charset.StandardCharsets.US_ASCII), tag.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    }

    static String hostName() {
        try {
            String h = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
            if (!h.isEmpty()) {
                return h;
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }

    @Override
    public String toString() {
        return "FleetMember(" + id + ")";
    }
}
