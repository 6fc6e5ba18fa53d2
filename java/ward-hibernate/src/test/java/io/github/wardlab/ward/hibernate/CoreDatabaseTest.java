package io.github.wardlab.ward.hibernate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.wardlab.ward.Ciphertext;
import io.github.wardlab.ward.Column;
import io.github.wardlab.ward.FleetMember;
import io.github.wardlab.ward.Indexer;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.SubjectKeys;
import io.github.wardlab.ward.WardException;
import io.github.wardlab.ward.testdb.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * ward-core's database paths on the databases themselves (this module has
 * their drivers): H2, and CI's MariaDB and PostgreSQL. Subject keys, with
 * the column types the Go library creates there (BYTEA, BLOB, VARBINARY):
 * Go's vector keys open Go's values; a seal goes into the subject's newest
 * key; a forget as Go leaves it (key rows deleted, a tombstone) refuses
 * both, at once with no TTL. The process registry: a JVM process joins
 * (the table created in each dialect), its row carries its keys and
 * forms, a heartbeat updates it, and leaving marks it exited.
 */
class CoreDatabaseTest {
    static List<String> databases() {
        return TestDatabases.kinds();
    }

    static String blob(String kind) {
        return switch (kind) {
            case "postgres" -> "BYTEA";
            case "mariadb" -> "BLOB";
            default -> "VARBINARY(1024)";
        };
    }

    /** Go's subject vector, whose keyring and ledger both tests use. */
    static JsonNode vector() throws Exception {
        return new ObjectMapper().readTree(Path.of("..", "..", "field", "subject", "testdata", "subject-v4.json").toFile());
    }

    /** The vector's keyring. */
    static Keyring keyring(JsonNode g) throws Exception {
        return Keyring.parse(new ObjectMapper().writeValueAsBytes(g.get("keyring")), MasterKey.parse(g.get("master_key").asText()));
    }

    /** The vector's ledger, in a table of its own on c's database. */
    static void ledger(Connection c, JsonNode g) throws Exception {
        c.createStatement().executeUpdate("CREATE TABLE ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body VARCHAR(4000) NOT NULL, mac VARCHAR(200) NOT NULL)");
        try (PreparedStatement st = c.prepareStatement("INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)")) {
            JsonNode l = g.get("ledger");
            st.setLong(1, l.get("counter").asLong());
            st.setString(2, l.get("body").asText());
            st.setString(3, l.get("mac").asText());
            st.executeUpdate();
        }
    }

    @ParameterizedTest
    @MethodSource("databases")
    void aJvmProcessJoinsBeatsAndLeaves(String kind) throws Exception {
        JsonNode g = vector();
        Keyring kr = keyring(g);
        TestDatabases.Db db = TestDatabases.create(kind, "ward_fleet_");
        try (Connection c = db.connect()) {
            ledger(c, g);
            FleetMember m = FleetMember.join(db.dataSource(), kr, List.of("sealed:messages.body"), null);
            String query = "SELECT keyring, exited, mac, caps, seen FROM ward_fleet WHERE id = '" + m.id() + "'";
            long seen;
            try (ResultSet rs = c.createStatement().executeQuery(query)) {
                assertTrue(rs.next());
                assertEquals(kr.id(), rs.getString(1));
                assertEquals(0, rs.getInt(2));
                assertTrue(rs.getString(4).contains("sealed:messages.body"), rs.getString(4));
                seen = rs.getLong(5);
            }
            Thread.sleep(5);
            m.beat();
            // A row marked exited behind the process's back is never revived (its MAC no longer holds): the heartbeat's new row is a duplicate, and ignored.
            c.createStatement().executeUpdate("UPDATE ward_fleet SET exited = 1 WHERE id = '" + m.id() + "'");
            m.beat();
            c.createStatement().executeUpdate("UPDATE ward_fleet SET exited = 0 WHERE id = '" + m.id() + "'");
            m.close();
            try (ResultSet rs = c.createStatement().executeQuery(query)) {
                assertTrue(rs.next());
                assertEquals(1, rs.getInt(2));
                assertTrue(rs.getLong(5) > seen);
            }
            FleetMember.join(db.dataSource(), kr, List.of(), null).close(); // the table is there: joined again
        } finally {
            db.drop().run();
        }
    }

    @ParameterizedTest
    @MethodSource("databases")
    void goKeysOpenSealAndForget(String kind) throws Exception {
        JsonNode g = vector();
        Keyring kr = keyring(g);
        TestDatabases.Db db = TestDatabases.create(kind, "ward_subject_");
        try (Connection c = db.connect()) {
            String b = blob(kind);
            c.createStatement().executeUpdate("CREATE TABLE ward_subject_keys (namespace VARCHAR(255) NOT NULL, subject VARCHAR(255) NOT NULL, version BIGINT NOT NULL,"
                    + " first SMALLINT, wrapped " + b + " NOT NULL, created_at BIGINT NOT NULL, held SMALLINT NOT NULL DEFAULT 0, recovery " + b + ", scoped " + b
                    + ", PRIMARY KEY (namespace, subject, version))");
            c.createStatement().executeUpdate("CREATE TABLE ward_subject_tombstones (namespace VARCHAR(255) NOT NULL, subject VARCHAR(255) NOT NULL,"
                    + " forgotten_at BIGINT NOT NULL, epoch BIGINT NOT NULL, mac VARCHAR(4000) NOT NULL, PRIMARY KEY (namespace, subject))");
            ledger(c, g);
            for (JsonNode k : g.get("keys")) {
                try (PreparedStatement st = c.prepareStatement("INSERT INTO ward_subject_keys (namespace, subject, version, wrapped, created_at, held) VALUES (?, ?, ?, ?, 0, ?)")) {
                    st.setString(1, g.get("namespace").asText());
                    st.setString(2, k.get("subject").asText());
                    st.setLong(3, k.get("version").asLong());
                    st.setBytes(4, HexFormat.of().parseHex(k.get("wrapped_hex").asText()));
                    st.setInt(5, k.get("held").asInt());
                    st.executeUpdate();
                }
            }
            SubjectKeys keys = new SubjectKeys(db.dataSource(), kr, g.get("namespace").asText(), "ward_ledger", java.time.Duration.ZERO);
            Column col = new Column(kr, g.get("table").asText(), g.get("column").asText(), "user_id").perSubject(keys, "user_id");
            for (JsonNode v : g.get("values")) {
                if (!v.get("subject").asText().equals("carol")) {
                    byte[] ct = HexFormat.of().parseHex(v.get("ciphertext_hex").asText());
                    assertEquals(v.get("plaintext").asText(), new String(col.open(ct, v.get("row").asLong(), v.get("subject").asText()), StandardCharsets.UTF_8));
                }
            }
            byte[] sealed = col.seal("on the database itself".getBytes(StandardCharsets.UTF_8), 7L, "alice");
            assertEquals(g.get("keys").get(0).get("version").asLong(), Ciphertext.keyId(sealed));
            assertEquals("on the database itself", new String(col.open(sealed, 7L, "alice"), StandardCharsets.UTF_8));
            // ward subject forget alice, as Go leaves it
            c.createStatement().executeUpdate("DELETE FROM ward_subject_keys WHERE subject = 'alice'");
            c.createStatement().executeUpdate("INSERT INTO ward_subject_tombstones VALUES ('users', 'alice', 0, 1, '00')");
            assertThrows(WardException.SubjectRefused.class, () -> col.open(sealed, 7L, "alice"));
            assertThrows(WardException.SubjectRefused.class, () -> col.seal(new byte[1], 8L, "alice"));
        } finally {
            db.drop().run();
        }
    }

    /**
     * Indexer on each database, over Go's indexer vector (its ledger, as a Go
     * process's Ledger.Indexer recorded it): a write in a transaction reads
     * the ledger there under a shared lock — on PostgreSQL and MariaDB a
     * change of the ledger (a re-key's next phase) from another connection
     * waits until that transaction ends — and a look-up finds the row.
     */
    @ParameterizedTest
    @MethodSource("databases")
    void anIndexerWritesUnderTheLedgersSharedLock(String kind) throws Exception {
        JsonNode g = new ObjectMapper().readTree(Path.of("..", "..", "ledger", "testdata", "indexer-v1.json").toFile());
        Keyring kr = keyring(g);
        TestDatabases.Db db = TestDatabases.create(kind, "ward_indexer_");
        try (Connection c = db.connect(); Connection other = db.connect()) {
            ledger(c, g);
            c.createStatement().executeUpdate("CREATE TABLE users (id BIGINT PRIMARY KEY, email_idx " + blob(kind) + ", email_idx2 " + blob(kind) + ")");
            Indexer x = new Indexer(kr, "users", "email");
            c.setAutoCommit(false);
            byte[][] w = x.write(c, "Alice@Example.com");
            try (PreparedStatement st = c.prepareStatement("INSERT INTO users (id, email_idx, email_idx2) VALUES (1, ?, ?)")) {
                st.setBytes(1, w[0]);
                st.setBytes(2, w[1]);
                st.executeUpdate();
            }
            if (!kind.equals("h2")) { // H2 takes no shared row lock: its writes lock the table
                other.createStatement().execute(kind.equals("postgres") ? "SET lock_timeout = '300ms'" : "SET SESSION innodb_lock_wait_timeout = 1");
                assertThrows(java.sql.SQLException.class, () -> other.createStatement().executeUpdate("UPDATE ward_ledger SET counter = counter WHERE id = 1"),
                        "the ledger changed under a write's transaction");
            }
            c.commit();
            c.setAutoCommit(true);
            assertEquals(1, other.createStatement().executeUpdate("UPDATE ward_ledger SET counter = counter WHERE id = 1"));
            byte[][] k = x.lookup(c, "alice@example.com");
            try (PreparedStatement st = c.prepareStatement("SELECT id FROM users WHERE email_idx = ? OR email_idx2 = ?")) {
                st.setBytes(1, k[0]);
                st.setBytes(2, k[1]);
                try (ResultSet rs = st.executeQuery()) {
                    assertTrue(rs.next());
                    assertEquals(1, rs.getLong(1));
                }
            }
        } finally {
            db.drop().run();
        }
    }
}
