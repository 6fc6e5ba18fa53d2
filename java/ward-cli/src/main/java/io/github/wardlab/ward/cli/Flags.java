package io.github.wardlab.ward.cli;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One command line: the command, the value's binding (--table, --column,
 * --row and --bind NAME=VALUE in the column's bind order), the form
 * (--binary) and where the keys are (--keyring, else WARD_KEYRING, or for
 * decrypt a grant file, --grant; the file's wrapper from --kms URL,
 * --master-key-file, else WARD_KMS or WARD_MASTER_KEY), and for encrypt the
 * database the value is for (--db: the ciphertext version every process
 * registered there reads). There is no flag that takes a key: a key on a
 * command line is in every process listing.
 */
public record Flags(String command, String table, String column, String row, List<String> bindNames,
                    List<String> bindValues, boolean binary, String keyring, String masterKeyFile, String kms, String grant,
                    EnvelopeFlags envelope, String db) {

    /**
     * Envelope encryption (Go's {@code --envelope}, {@code --context},
     * {@code --ec}): seal under a data key the key service wraps, no keyring;
     * bound to --context, or to the row's field context, and to the
     * encryption context the key service binds.
     *
     * @param seal encrypt as an envelope
     * @param context the raw context, or null for the row's field context
     * @param ec the encryption context
     */
    public record EnvelopeFlags(boolean seal, String context, Map<String, String> ec) {}

    /** Parses args ({@code encrypt|decrypt [flags]}), with env for the defaults. */
    public static Flags parse(String[] args, Map<String, String> env) throws UsageException {
        if (args.length == 0 || !(args[0].equals("encrypt") || args[0].equals("decrypt"))) {
            throw new UsageException("usage: ward-java encrypt|decrypt --table T --column C --row R [--bind NAME=VALUE]... [--binary] [--keyring F [--db URL] | --grant F | --envelope [--context C] [--ec K=V,…]] [--kms URL | --master-key-file F]");
        }
        Builder b = new Builder(args[0], env);
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                value = a.substring(eq + 1);
                a = a.substring(0, eq);
            }
            if (a.equals("--binary") || a.equals("--envelope")) {
                if (value != null) {
                    throw new UsageException(a + " takes no value");
                }
                b.seen.add(a);
                if (a.equals("--binary")) {
                    b.binary = true;
                } else {
                    b.envelope = true;
                }
                continue;
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new UsageException(a + " needs a value");
                }
                value = args[++i];
            }
            b.set(a, value);
        }
        return b.build();
    }

    /** What a command line does, which decides the flags it may carry. */
    private enum Mode { SEAL, SEAL_ENVELOPE, OPEN, OPEN_GRANT }

    /** The modes a flag is allowed in, and why it is refused elsewhere. */
    private record Rule(Set<Mode> modes, String why) {}

    /** The flags that belong to some modes only; every other flag goes with every mode. */
    private static final Map<String, Rule> RULES = new LinkedHashMap<>();

    static {
        RULES.put("--envelope", new Rule(EnumSet.of(Mode.SEAL_ENVELOPE), "is for encrypt: decrypt reads envelopes by their form"));
        RULES.put("--grant", new Rule(EnumSet.of(Mode.OPEN_GRANT), "opens values: encrypt needs the keyring"));
        RULES.put("--binary", new Rule(EnumSet.of(Mode.SEAL, Mode.SEAL_ENVELOPE), "is for encrypt: decrypt reads either form"));
        RULES.put("--context", new Rule(EnumSet.complementOf(EnumSet.of(Mode.OPEN_GRANT)),
                "is not a grant's: a grant opens values of the columns it names (--table/--column/--row)"));
        RULES.put("--ec", new Rule(EnumSet.complementOf(EnumSet.of(Mode.SEAL)), "is the encryption context of an envelope (--envelope)"));
        RULES.put("--db", new Rule(EnumSet.of(Mode.SEAL), "is for encrypt under the keyring: the database the value is for"));
    }

    private static final class Builder {
        final String command;
        String table = "", column = "", row = "", keyring, masterKeyFile = "", kms = "", grant = "", db = "";
        final String kmsEnv;
        boolean binary, envelope;
        String context;
        final Map<String, String> ec = new java.util.TreeMap<>();
        final List<String> names = new ArrayList<>(), values = new ArrayList<>();
        final Set<String> seen = new HashSet<>();

        Builder(String command, Map<String, String> env) {
            this.command = command;
            this.keyring = env.getOrDefault("WARD_KEYRING", "");
            this.kmsEnv = env.getOrDefault("WARD_KMS", "");
        }

        void set(String flag, String value) throws UsageException {
            seen.add(flag);
            switch (flag) {
                case "--table" -> table = value;
                case "--column" -> column = value;
                case "--row" -> row = value;
                case "--keyring" -> keyring = value;
                case "--master-key-file" -> masterKeyFile = value;
                case "--kms" -> kms = value;
                case "--grant" -> grant = value;
                case "--db" -> db = value;
                case "--context" -> context = value;
                case "--ec" -> { // k=v,k2=v2, as Go's --ec; repeatable
                    for (String pair : value.split(",", -1)) {
                        int eq = pair.indexOf('=');
                        if (eq <= 0 || ec.put(pair.substring(0, eq), pair.substring(eq + 1)) != null) {
                            throw new UsageException("--ec \"" + pair + "\" is not KEY=VALUE, or names a key twice");
                        }
                    }
                }
                case "--bind" -> {
                    int eq = value.indexOf('=');
                    if (eq <= 0) {
                        throw new UsageException("--bind \"" + value + "\" is not NAME=VALUE");
                    }
                    names.add(value.substring(0, eq));
                    values.add(value.substring(eq + 1));
                }
                default -> throw new UsageException("unknown flag " + flag + " (a key is never a flag: use WARD_MASTER_KEY or --master-key-file)");
            }
        }

        Flags build() throws UsageException {
            Mode mode = command.equals("encrypt") ? (envelope ? Mode.SEAL_ENVELOPE : Mode.SEAL) : (grant.isEmpty() ? Mode.OPEN : Mode.OPEN_GRANT);
            for (Map.Entry<String, Rule> r : RULES.entrySet()) {
                if (seen.contains(r.getKey()) && !r.getValue().modes().contains(mode)) {
                    throw new UsageException(r.getKey() + " " + r.getValue().why());
                }
            }
            boolean field = !table.isEmpty() || !column.isEmpty() || !row.isEmpty() || !names.isEmpty();
            if (context != null && field) {
                throw new UsageException("--context or --table/--column/--row: one binding, not both");
            }
            if (context == null && (table.isEmpty() || column.isEmpty() || row.isEmpty())) {
                throw new UsageException("--table, --column and --row go together, and are needed (or --context, for an envelope)");
            }
            if (mode == Mode.OPEN_GRANT) {
                keyring = ""; // a grant opens in the keyring's place (WARD_KEYRING is not read)
            } else if (mode == Mode.SEAL && keyring.isEmpty()) {
                throw new UsageException("no keyring: pass --keyring or set WARD_KEYRING (or --envelope, under the key service alone)");
            }
            if (!kms.isEmpty() && !masterKeyFile.isEmpty()) {
                throw new UsageException("--kms and --master-key-file name two wrappers: pass one");
            }
            if (kms.isEmpty() && masterKeyFile.isEmpty()) {
                kms = kmsEnv; // WARD_KMS, else WARD_MASTER_KEY
            }
            return new Flags(command, table, column, row, List.copyOf(names), List.copyOf(values), binary, keyring, masterKeyFile, kms, grant,
                    new EnvelopeFlags(envelope, context, Map.copyOf(ec)), db);
        }
    }
}
