package io.github.wardlab.ward.cli;

import io.github.wardlab.ward.Ciphertext;
import io.github.wardlab.ward.Column;
import io.github.wardlab.ward.Envelope;
import io.github.wardlab.ward.FleetMember;
import io.github.wardlab.ward.Grant;
import io.github.wardlab.ward.KeyService;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.Ledger;
import io.github.wardlab.ward.LedgerState;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.WardException;
import io.github.wardlab.ward.awskms.AwsKms;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.function.Function;

/**
 * {@code ward-java encrypt|decrypt}: the Go CLI's value commands on the JVM,
 * so operators and tests drive Java as they drive Go ({@code ward}) and
 * Python ({@code ward-py}). encrypt seals stdin for a row (ciphertext v4,
 * or with --db the version every process registered there reads; the text
 * form and a newline, or with --binary the bytes); decrypt opens a
 * value of either form and version 3 or 4 from stdin. Exit codes are the Go
 * CLI's: 0 done, 1 the value does not open or a key or file is refused, 2
 * a usage error. Errors name what failed and never hold a key or a value.
 */
public final class WardCli {
    /** The most stdin holds, as the Go CLI's limit. */
    public static final int MAX_INPUT = 64 << 20;

    private WardCli() {}

    /** Runs one command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(run(args, System.in, System.out, System.err, System.getenv()));
    }

    /** Runs one command line with the given streams and environment; returns the exit code. */
    public static int run(String[] args, InputStream in, OutputStream out, PrintStream err, Map<String, String> env) {
        Flags f;
        try {
            f = Flags.parse(args, env);
        } catch (UsageException e) {
            err.println("ward-java: " + e.getMessage());
            return 2;
        }
        try {
            byte[] input = readInput(in);
            boolean envelope = f.envelope().seal() || (f.command().equals("decrypt") && Envelope.isEnvelope(input));
            byte[] result = envelope ? envelope(f, env, input) : keyringValue(f, env, input, err);
            out.write(result);
            out.flush();
            Arrays.fill(result, (byte) 0);
            return 0;
        } catch (UsageException e) {
            err.println("ward-java: " + e.getMessage());
            return 2;
        } catch (WardException e) {
            err.println("ward-java: " + e.getClass().getSimpleName() + ": " + e.getMessage() + hint(e));
            return 1;
        } catch (IOException e) {
            err.println("ward-java: " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return 1;
        } catch (InvalidPathException e) {
            err.println("ward-java: a file path that is not one: " + e.getReason());
            return 2;
        }
    }

    /**
     * A keyring or grant file opened with its wrapper: the KMS key of --kms
     * (or WARD_KMS), else the master key of --master-key-file or
     * WARD_MASTER_KEY. An AWS KMS client lives only while the file opens.
     */
    static <T> T open(Flags f, Map<String, String> env, Function<KeyService, T> load) throws UsageException {
        if (f.kms().startsWith("awskms://")) {
            try (AwsKms ks = AwsKms.fromUrl(f.kms())) {
                return load.apply(ks);
            }
        }
        if (f.kms().startsWith("local://")) {
            return load.apply(MasterKey.resolve(f.kms().substring("local://".length()), env));
        }
        if (!f.kms().isEmpty()) {
            throw new UsageException("--kms takes awskms://KEY?region=R[&endpoint=URL] or local://PATH");
        }
        return load.apply(MasterKey.resolve(f.masterKeyFile(), env));
    }

    /** A value of the field layer: sealed or opened with the keyring, or opened with a grant. */
    static byte[] keyringValue(Flags f, Map<String, String> env, byte[] input, PrintStream err) throws UsageException {
        if (!f.envelope().ec().isEmpty()) {
            throw new UsageException("--ec binds envelopes; this value is not one");
        }
        if (f.envelope().context() != null) {
            return rawContextValue(f, env, input);
        }
        if (f.grant().isEmpty() && f.keyring().isEmpty()) {
            throw new UsageException("no keyring: pass --keyring or set WARD_KEYRING (or --grant FILE)");
        }
        String[] bind = f.bindNames().toArray(String[]::new);
        Column col;
        if (f.grant().isEmpty()) {
            Keyring kr = open(f, env, ks -> Keyring.load(Path.of(f.keyring()), ks));
            col = new Column(kr, f.table(), f.column(), bind);
            if (!f.db().isEmpty()) {
                col = gated(col, kr, f.db(), err);
            }
        } else {
            Grant g = open(f, env, ks -> Grant.load(Path.of(f.grant()), ks));
            col = new Column(g, f.table(), f.column(), bind);
        }
        Object[] values = f.bindValues().toArray();
        return f.command().equals("encrypt") ? encrypt(col, f, input, values) : decrypt(col, f, input, values);
    }

    /**
     * A keyring value bound to a raw --context instead of a row (the Go
     * CLI's kr.Seal and kr.Open): ciphertext v3 under the primary, class 1,
     * the context as it is; --db needs a row's column.
     */
    static byte[] rawContextValue(Flags f, Map<String, String> env, byte[] input) throws UsageException {
        if (!f.db().isEmpty()) {
            throw new UsageException("--db needs --table, --column and --row: the fleet's forms are a column's");
        }
        Keyring kr = open(f, env, ks -> Keyring.load(Path.of(f.keyring()), ks));
        byte[] context = f.envelope().context().getBytes(StandardCharsets.UTF_8);
        if (f.command().equals("decrypt")) {
            byte[] stored = input.length > 0 && input[0] == 'w' ? new String(input, StandardCharsets.US_ASCII).strip().getBytes(StandardCharsets.US_ASCII) : input;
            return kr.open(Ciphertext.decode(stored), context, new byte[0]);
        }
        byte[] ct = kr.sealV3(input, context);
        return f.binary() ? ct : (Ciphertext.toText(ct) + "\n").getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The column under the write rule of the fleet registered in the
     * database url names (Go's encrypt --db): its ledger verified against the
     * keyring, ciphertext v4 once every process registered there reads it
     * (FleetMember.ready), v3 until then, said on stderr. url is the Go
     * CLI's sqlite:PATH (an existing file) or a JDBC URL.
     */
    static Column gated(Column col, Keyring kr, String url, PrintStream err) throws UsageException {
        String jdbc;
        if (url.startsWith("sqlite:")) {
            String path = url.substring("sqlite:".length()).replaceFirst("^//", "");
            if (!java.nio.file.Files.isRegularFile(Path.of(path))) {
                throw new UsageException("--db: no database at " + path + " (ward-java opens existing databases only)");
            }
            jdbc = "jdbc:sqlite:" + path;
        } else if (url.startsWith("jdbc:")) {
            jdbc = url;
        } else {
            throw new UsageException("--db takes sqlite:PATH or a JDBC URL (jdbc:postgresql://HOST/DB, jdbc:mariadb://HOST/DB)");
        }
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(jdbc)) {
            LedgerState st = Ledger.verify(c, kr);
            if (!FleetMember.ready(c, kr, st, FleetMember.DEFAULT_TABLE, LedgerState.CIPHERTEXT_V4)) {
                err.println("ward-java: writing ciphertext v3: not every process registered in --db reads v4 yet (see ward fleet)");
                return col.checkedBy(st);
            }
            java.util.Set<String> opened = new java.util.HashSet<>(st.openedForms());
            opened.add(LedgerState.CIPHERTEXT_V4);
            return col.checkedBy(new LedgerState(st.database(), st.counter(), st.epoch(), opened, st.counters(), st.waitingForms(), st.marks(), st.indexes(), st.tallies()));
        } catch (java.sql.SQLException e) {
            throw new WardException("--db: the database: SQLSTATE " + e.getSQLState());
        }
    }

    /**
     * An envelope sealed or opened under the key service alone (Go's
     * --envelope): bound to --context, or to the row's field context (v3,
     * as the Go CLI binds it), and to --ec.
     */
    static byte[] envelope(Flags f, Map<String, String> env, byte[] input) throws UsageException {
        byte[] context = f.envelope().context() != null ? f.envelope().context().getBytes(StandardCharsets.UTF_8)
                : new Column((Keyring) null, f.table(), f.column(), f.bindNames().toArray(String[]::new)).contextV3(f.row(), f.bindValues().toArray());
        Map<String, String> ec = f.envelope().ec();
        if (f.command().equals("decrypt")) {
            return open(f, env, ks -> Envelope.open(ks, input, context, ec));
        }
        byte[] sealed = open(f, env, ks -> Envelope.seal(ks, input, context, ec));
        return f.binary() ? sealed : (Envelope.toText(sealed) + "\n").getBytes(StandardCharsets.US_ASCII);
    }

    static byte[] encrypt(Column col, Flags f, byte[] input, Object[] values) {
        byte[] ct = col.seal(input, f.row(), values);
        if (f.binary()) {
            return ct;
        }
        return (Ciphertext.toText(ct) + "\n").getBytes(StandardCharsets.US_ASCII);
    }

    static byte[] decrypt(Column col, Flags f, byte[] input, Object[] values) {
        byte[] stored = input;
        if (stored.length > 0 && stored[0] == 'w') { // the text form, as printed with its newline
            stored = new String(stored, StandardCharsets.US_ASCII).strip().getBytes(StandardCharsets.US_ASCII);
        }
        return col.open(stored, f.row(), values);
    }

    static byte[] readInput(InputStream in) throws IOException, UsageException {
        byte[] b = in.readNBytes(MAX_INPUT + 1);
        if (b.length > MAX_INPUT) {
            throw new UsageException("input larger than " + MAX_INPUT + " bytes");
        }
        return b;
    }

    static String hint(WardException e) {
        if (e instanceof WardException.WrongContext) {
            return "\nhint: pass the same --table/--column/--row and --bind used to encrypt";
        }
        if (e instanceof WardException.UnknownKey) {
            return "\nhint: the value was sealed under a key this keyring (or grant) does not hold";
        }
        if (e instanceof WardException.NotGranted) {
            return "\nhint: a grant opens ciphertext v4 of the columns it names; ward reseal moves v3 values to v4";
        }
        return "";
    }
}
