package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * Indexer: a re-keyable blind index computed as the ledger records it and
 * followed through each phase of a re-key (planted ledgers, as Python's
 * tests/test_indexer.py), and with the Go CLI: {@code ward keyring reindex}
 * waits for a JVM process that joined the fleet and follows nothing,
 * naming it, and completes once it follows the indexer; Go's fill and
 * ward-java's writes find every row.
 */
class IndexerTest {
    static final String SCHEMA = "CREATE TABLE ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL)";

    /** A ledger of database db recording indexes, MAC'd as the keyring's holder writes it (counter 1: a keyring anchoring no database). */
    static void plant(Connection c, Keyring kr, String db, List<ObjectNode> indexes) throws Exception {
        ObjectNode body = Vectors.JSON.createObjectNode().put("database", db).put("keyring", kr.id()).put("generation", kr.generation())
                .put("counter", 1);
        long epoch = 0;
        for (long e = 1; e < 64; e++) {
            if (kr.stateMacKey(e, false) != null) {
                epoch = e;
            }
        }
        body.put("epoch", epoch);
        body.putArray("indexes").addAll(indexes);
        String text = Vectors.JSON.writeValueAsString(body);
        c.createStatement().executeUpdate("DELETE FROM ward_ledger");
        try (PreparedStatement st = c.prepareStatement("INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, 1, ?, ?)")) {
            st.setString(1, text);
            st.setString(2, LedgerTest.mac(kr.stateMacKey(epoch, false), text));
            st.executeUpdate();
        }
    }

    static ObjectNode record(long epoch, int slot, Long rekeyEpoch, String phase) {
        ObjectNode r = Vectors.JSON.createObjectNode().put("table", "users").put("column", "email").put("name", "email").put("index", "email_idx")
                .put("spare", "email_idx2").put("normalizer", "fold").put("normalizer_version", 1).put("size", 16).put("epoch", epoch);
        if (slot != 0) {
            r.put("slot", slot);
        }
        if (rekeyEpoch != null) {
            r.putObject("rekey").put("epoch", rekeyEpoch).put("phase", phase);
        }
        return r;
    }

    static byte[] v2(Keyring kr, String db, long epoch, String value) {
        return BlindIndex.v2(kr, "users", "email", new BlindIndex.Options(db, "email", Normalizer.FOLD, 16, epoch)).compute(value);
    }

    @Test
    void followsEachPhaseOfARekey() throws Exception {
        JsonNode g = Vectors.read("field/testdata/blind-index-v2.json"); // a keyring with two epochs
        Keyring kr = Vectors.keyring(g);
        List<Long> ids = new ArrayList<>(kr.keys().keySet());
        ids.sort(null);
        long e1 = ids.get(0), e2 = ids.get(1);
        String db = g.get("database").asText();
        SQLiteDataSource ds = new SQLiteDataSource();
        ds.setUrl("jdbc:sqlite::memory:");
        try (Connection c = ds.getConnection()) {
            c.createStatement().executeUpdate(SCHEMA);
            Indexer x = new Indexer(kr, "users", "email");
            plant(c, kr, db, List.of(record(e1, 0, null, null)));
            byte[] a1 = v2(kr, db, e1, "a@x"), a2 = v2(kr, db, e2, "a@x");
            assertArrayEquals(new byte[][] {a1, null}, x.lookup(c, "A@X"));
            assertArrayEquals(new byte[][] {a1, null}, x.write(c, "a@x"));
            assertArrayEquals(new String[] {"email_idx", "email_idx2"}, x.columns(c));
            assertEquals(List.of(), x.acks(Ledger.verify(c, kr)));
            plant(c, kr, db, List.of(record(e1, 0, e2, "both")));
            assertArrayEquals(new byte[][] {a1, a2}, x.lookup(c, "a@x"));
            assertArrayEquals(new byte[][] {a1, a2}, x.write(c, "a@x"));
            assertEquals(1, x.acks(Ledger.verify(c, kr)).size());
            plant(c, kr, db, List.of(record(e1, 0, e2, "filled")));
            assertArrayEquals(new byte[][] {a1, a2}, x.lookup(c, "a@x"));
            assertArrayEquals(new byte[][] {null, a2}, x.write(c, "a@x"));
            List<String> acks = x.acks(Ledger.verify(c, kr));
            assertEquals(2, acks.size());
            assertTrue(acks.get(0).matches("integrity:index\\.[0-9a-f]{16}@" + String.format("%08x", e2) + "\\.both"), acks.get(0));
            plant(c, kr, db, List.of(record(e2, 1, null, null))); // switched: the spare column holds the values
            assertArrayEquals(new byte[][] {null, a2}, x.lookup(c, "a@x"));
            assertArrayEquals(new byte[][] {null, a2}, x.write(c, "a@x"));
            plant(c, kr, db, List.of(record(0, 0, e1, "both"))); // a v1 index moving to v2
            byte[] v1 = BlindIndex.v1(kr, "users", "email", Normalizer.FOLD, 16).compute("a@x");
            assertArrayEquals(new byte[][] {v1, a1}, x.write(c, "a@x"));
            ObjectNode own = record(e1, 0, null, null).put("normalizer", "app-trim");
            plant(c, kr, db, List.of(own));
            assertThrows(WardException.class, () -> x.lookup(c, "a@x"), "an application's own normaliser");
            plant(c, kr, db, List.of(record(e1, 0, null, null).put("spare", "")));
            assertThrows(WardException.Binding.class, () -> x.write(c, "a@x"), "no spare column");
            plant(c, kr, db, List.of());
            assertThrows(WardException.Binding.class, () -> x.lookup(c, "a@x"), "not recorded");
        }
    }

    /**
     * Go's indexer vector (ledger/testdata/indexer-v1.json) in SQLite: rows
     * written through the Indexer; after a rotation, {@code ward keyring
     * reindex} gives up naming a JVM process that joined and follows
     * nothing, and completes once it follows the indexer; every row is then
     * found by the new epoch's value in the spare column, the old column
     * empty, and a new write goes there alone.
     */
    @Test
    void theGoCliRekeysWhileAJvmProcessFollows(@TempDir Path dir) throws Exception {
        Vectors.requireGoCli();
        JsonNode g = Vectors.read("ledger/testdata/indexer-v1.json");
        Path mk = dir.resolve("mk.b64"), krFile = dir.resolve("kr.json"), db = dir.resolve("app.db");
        Files.writeString(mk, g.get("master_key").asText());
        Files.write(krFile, Vectors.JSON.writeValueAsBytes(g.get("keyring")));
        SQLiteDataSource ds = new SQLiteDataSource();
        ds.setUrl("jdbc:sqlite:" + db);
        ds.setBusyTimeout(30_000);
        try (Connection c = ds.getConnection()) {
            c.createStatement().executeUpdate(g.get("schema").asText());
            c.createStatement().executeUpdate(SCHEMA);
            try (PreparedStatement st = c.prepareStatement("INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)")) {
                st.setLong(1, g.get("ledger").get("counter").asLong());
                st.setString(2, g.get("ledger").get("body").asText());
                st.setString(3, g.get("ledger").get("mac").asText());
                st.executeUpdate();
            }
        }
        Keyring kr = Keyring.load(krFile, MasterKey.load(mk));
        Indexer x = new Indexer(kr, "users", "email");
        Column email = new Column(kr, "users", "email");
        List<String> emails = List.of("a@example.com", "B@example.com", "c@example.com");
        for (int i = 0; i < emails.size(); i++) {
            insert(ds, x, email, i, emails.get(i));
        }
        String[] keys = {"--keyring", krFile.toString(), "--master-key-file", mk.toString(), "--db", "sqlite:" + db};
        Object[] rotated = FleetMemberTest.goRun(cat(new String[] {"keyring", "rotate"}, keys));
        assertEquals(0, rotated[0], (String) rotated[1]);
        List<WardException> errors = new CopyOnWriteArrayList<>();
        try (FleetMember m = FleetMember.join(ds, kr, "ward_fleet", "ward_ledger", List.of("sealed:users.email"), Duration.ofMillis(200), errors::add)) {
            Object[] waited = FleetMemberTest.goRun(cat(new String[] {"keyring", "reindex", "--wait", "1500ms"}, keys));
            assertEquals(1, waited[0], (String) waited[1]);
            assertTrue(((String) waited[1]).contains(m.id()), (String) waited[1]);
            m.follow(x);
            Object[] done = FleetMemberTest.goRun(cat(new String[] {"keyring", "reindex", "--wait", "120s"}, keys));
            assertEquals(0, done[0], (String) done[1]);
            assertTrue(((String) done[1]).contains("3 rows indexed, now in email_idx2"), (String) done[1]);
            assertTrue(errors.isEmpty(), errors.toString());
        }
        insert(ds, x, email, 3, "d@example.com");
        try (Connection c = ds.getConnection()) {
            for (int i = 0; i < 4; i++) {
                String e = i < 3 ? emails.get(i) : "d@example.com";
                byte[][] k = x.lookup(c, e.toUpperCase(java.util.Locale.ROOT));
                assertNull(k[0], "after the switch, one column");
                try (PreparedStatement st = c.prepareStatement("SELECT id, email_idx FROM users WHERE email_idx2 = ?")) {
                    st.setBytes(1, k[1]);
                    try (ResultSet rs = st.executeQuery()) {
                        assertTrue(rs.next(), e);
                        assertEquals(i, rs.getLong(1));
                        assertNull(rs.getBytes(2), "the old column cleared");
                    }
                }
            }
            assertNotEquals(0, kr.primary().id());
        }
    }

    /** Writes a row in one transaction: the index's values through the Indexer, the email sealed to its row. */
    static void insert(SQLiteDataSource ds, Indexer x, Column email, long id, String value) throws Exception {
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            byte[][] w = x.write(c, value);
            try (PreparedStatement st = c.prepareStatement("INSERT INTO users (id, email, email_idx, email_idx2) VALUES (?, ?, ?, ?)")) {
                st.setLong(1, id);
                st.setBytes(2, email.seal(value.getBytes(StandardCharsets.UTF_8), id));
                st.setBytes(3, w[0]);
                st.setBytes(4, w[1]);
                st.executeUpdate();
            }
            c.commit();
        }
    }

    static String[] cat(String[] a, String[] b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
