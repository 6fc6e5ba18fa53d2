package io.github.wardlab.ward;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The keyring ledger's check (FORMAT.md, "Keyring ledger"), as Go's
 * {@code ledger} package and the Python package make it before they write:
 * the database's ledger row, its MAC under the keyring's state key of its
 * epoch, its keyring, and the keyring file's anchor for the database. A
 * database writer who changes, deletes, forges (with any copy of the
 * keyring file: epoch 0 is refused where state keys exist), copies from
 * another database, or puts back an older copy of the ledger is refused
 * ({@link WardException.Ledger}); a keyring file older than the ledger is
 * {@link WardException.StaleKeyring}. What it returns says which forms the
 * fleet reads ({@link LedgerState#allows}).
 */
public final class Ledger {
    /** The ledger's table unless the application names another. */
    public static final String DEFAULT_TABLE = "ward_ledger";

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern IDENT = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");
    private static final byte[] MAC_LABEL = "ward ledger state v1\0".getBytes(StandardCharsets.US_ASCII);

    private Ledger() {}

    /** Reads the database's ledger ({@value #DEFAULT_TABLE}) and verifies it against kr. */
    public static LedgerState verify(Connection db, Keyring kr) {
        return verify(db, kr, DEFAULT_TABLE, false);
    }

    /**
     * Reads a ledger table and verifies it. With share, the row is read
     * under a shared lock in the caller's transaction (PostgreSQL's FOR
     * SHARE, MySQL's and MariaDB's LOCK IN SHARE MODE), so the ledger
     * cannot change before it ends; SQLite and H2 lock the database on
     * write instead. A driver's message never reaches the error: only its
     * SQLSTATE.
     */
    public static LedgerState verify(Connection db, Keyring kr, String table, boolean share) {
        if (!IDENT.matcher(table).matches()) {
            throw new WardException.Ledger("a ledger table name that is not an identifier");
        }
        try {
            String lock = share ? shareLock(db.getMetaData().getDatabaseProductName()) : "";
            try (PreparedStatement st = db.prepareStatement("SELECT counter, body, mac FROM " + table + " WHERE id = 1" + lock);
                    ResultSet rs = st.executeQuery()) {
                if (!rs.next()) {
                    throw new WardException.Ledger("the database's ledger (" + table + ") is empty: a database writer deleted it");
                }
                long counter = rs.getLong(1);
                String body = rs.getString(2), mac = rs.getString(3);
                try {
                    return verifyRow(kr, counter, body, mac);
                } catch (WardException.StaleKeyring e) {
                    // Another process may have saved a newer keyring file since this one was loaded (a rotation): read it once.
                    if (!kr.refreshQuietly()) {
                        throw e;
                    }
                    return verifyRow(kr, counter, body, mac);
                }
            }
        } catch (SQLException e) {
            throw new WardException.Ledger("reading the ledger (" + table + "): SQLSTATE " + e.getSQLState()
                    + " (no ledger: ward writes only where a verified ledger stands)");
        }
    }

    /**
     * Verifies the ledger on a connection of its own from db (the members
     * and stores that keep a DataSource); a database that cannot be reached
     * is a typed {@link WardException.Ledger} naming its SQLSTATE only.
     */
    public static LedgerState verify(javax.sql.DataSource db, Keyring kr, String table) {
        try (Connection c = db.getConnection()) {
            return verify(c, kr, table, false);
        } catch (SQLException e) {
            throw new WardException.Ledger("no connection to read the ledger: SQLSTATE " + e.getSQLState());
        }
    }

    static String shareLock(String product) {
        String p = product == null ? "" : product.toLowerCase(java.util.Locale.ROOT);
        if (p.contains("postgres")) {
            return " FOR SHARE";
        }
        return p.contains("mysql") || p.contains("mariadb") ? " LOCK IN SHARE MODE" : "";
    }

    /** Authenticates one ledger row (its counter, JSON body and hex MAC) and checks it against the keyring's anchor. */
    public static LedgerState verifyRow(Keyring kr, long counter, String body, String macHex) {
        JsonNode st;
        byte[] mac;
        try {
            st = JSON.readTree(body == null ? "" : body);
            mac = HexFormat.of().parseHex(macHex == null ? "" : macHex);
        } catch (IOException | IllegalArgumentException e) {
            throw new WardException.Ledger("the ledger row is not well-formed: a database writer changed it");
        }
        if (st == null || !st.isObject()) {
            throw new WardException.Ledger("the ledger row is not well-formed: a database writer changed it");
        }
        if (!kr.id().equals(st.path("keyring").asText(null))) {
            throw new WardException.Ledger("the database's values are sealed under keyring " + Wire.clip(st.path("keyring").asText(""), 40) + ", not " + kr.id());
        }
        if (st.path("counter").asLong(-1) != counter) {
            throw new WardException.Ledger("the ledger's counter does not match its body: a database writer changed it");
        }
        long epoch = st.path("epoch").asLong(0);
        String db = st.path("database").asText("");
        checkMac(kr, epoch, db, body, mac);
        if (st.path("generation").asLong(0) > kr.generation()) {
            throw new WardException.StaleKeyring("the keyring file is older than the one that wrote the ledger: load the current file");
        }
        checkAnchor(kr, db, counter, epoch);
        for (JsonNode k : st.path("keys")) {
            if (!kr.holds(k.path("id").asLong(-1)) && !"retired".equals(k.path("state").asText(""))) {
                throw new WardException.StaleKeyring(String.format("the database uses key %08x, which this keyring lacks: load the current keyring file", k.path("id").asLong()));
            }
        }
        Set<String> opened = new HashSet<>(), waiting = new HashSet<>(), marks = new HashSet<>();
        for (JsonNode f : st.path("forms")) {
            JsonNode when = f.get("opened"); // Unix milliseconds when every process read it; absent until then
            boolean open = when != null && (when.isBoolean() ? when.asBoolean() : when.canConvertToLong() && when.asLong() != 0);
            (open ? opened : waiting).add(f.path("name").asText(""));
        }
        for (JsonNode m : st.path("marks")) {
            marks.add(m.isTextual() ? m.asText() : m.path("name").asText(""));
        }
        Map<String, Long> counters = new HashMap<>();
        st.path("counters").properties().forEach(c -> counters.put(c.getKey(), c.getValue().asLong(0)));
        java.util.List<LedgerState.Index> indexes = new java.util.ArrayList<>();
        st.path("indexes").forEach(i -> indexes.add(index(i)));
        return new LedgerState(db, counter, epoch, opened, counters, waiting, marks, indexes, tallies(st.path("tallies")));
    }

    /** A recorded blind index ({@code indexes[i]}: Go's {@code ledger.IndexColumn}). */
    private static LedgerState.Index index(JsonNode i) {
        String column = i.path("column").asText("");
        JsonNode rk = i.get("rekey");
        return new LedgerState.Index(i.path("table").asText(""), column, i.path("name").asText(column), i.path("index").asText(""),
                i.path("spare").asText(""), i.path("normalizer").asText(""), i.path("normalizer_version").asInt(0), i.path("size").asInt(0),
                i.path("epoch").asLong(0), i.path("slot").asInt(0),
                rk == null || rk.isNull() ? null : new LedgerState.Rekey(rk.path("epoch").asLong(0), rk.path("phase").asText("")));
    }

    /** The ledger's tallies ({@code {"name": {"count", "since", "head"}}}, the head base64), each valid or a typed error. */
    private static Map<String, Tally> tallies(JsonNode node) {
        Map<String, Tally> out = new HashMap<>();
        for (var e : node.properties()) {
            JsonNode t = e.getValue();
            String head = t.path("head").asText("");
            Tally tally = new Tally(t.path("count").asLong(0), t.path("since").asLong(0), head.isEmpty() ? null : Wire.b64std(head, "a tally's head"));
            if (!tally.valid()) {
                throw new WardException.Ledger("the ledger's tally " + Wire.clip(e.getKey(), 60) + " is malformed");
            }
            out.put(e.getKey(), tally);
        }
        return out;
    }

    private static void checkMac(Keyring kr, long epoch, String db, String body, byte[] mac) {
        byte[] key = kr.stateMacKey(epoch, false);
        Keyring.Anchor a = kr.anchor(db);
        if (key == null && epoch == 0 && a != null && a.epoch() == 0) {
            // A file from before state keys anchored this database's ledger at
            // epoch 0, and its first key change gave it state keys while the
            // ledger was still there: it verifies until its next write moves
            // it (Go: ledger.verifyStateMAC).
            key = kr.stateMacKey(0, true);
        }
        if (key == null && epoch == 0) {
            throw new WardException.Ledger("the ledger is MAC'd under epoch 0 (the root alone, which any copy of the keyring file derives) in a keyring with state keys: a database writer forged it");
        }
        if (key == null) {
            throw new WardException.StaleKeyring("the ledger was written under a newer keyring file (state epoch " + epoch + "): load the current file");
        }
        byte[] want;
        try {
            Mac h = Mac.getInstance("HmacSHA256");
            h.init(new SecretKeySpec(key, "HmacSHA256"));
            h.update(MAC_LABEL);
            want = h.doFinal(body.getBytes(StandardCharsets.UTF_8));
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
        if (!MessageDigest.isEqual(want, mac)) {
            throw new WardException.Ledger("the ledger fails its MAC: a database writer changed it");
        }
    }

    private static void checkAnchor(Keyring kr, String db, long counter, long epoch) {
        Keyring.Anchor a = kr.anchor(db);
        if (a == null) {
            if (!kr.anchored().isEmpty()) {
                // A database the keyring never anchored, while it anchors others: a
                // ledger forged with any keyring file ever written, or copied from
                // another database; only ward ledger adopt --another-database joins one.
                throw new WardException.StaleKeyring("the ledger names database " + Wire.clip(db, 40) + ", which keyring " + kr.id()
                        + " does not anchor (it anchors " + Wire.clip(String.join(", ", new TreeSet<>(kr.anchored())), 200)
                        + "): forged or copied by a database writer, or an interrupted adoption (ward ledger adopt --another-database)");
            }
            if (counter > 1) {
                throw new WardException.StaleKeyring("the keyring file does not anchor database " + Wire.clip(db, 40) + " at counter " + counter + ": it is another copy, or older than the database");
            }
        } else if (counter < a.counter() || epoch < a.epoch()) {
            throw new WardException.Ledger("the ledger is at counter " + counter + ", anchored at " + a.counter() + ": an older copy of the ledger was put back (ward ledger recover)");
        }
    }
}
