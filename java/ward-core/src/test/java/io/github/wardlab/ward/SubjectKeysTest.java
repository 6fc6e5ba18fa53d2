package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * Subject keys over Go's vector (field/subject/testdata/subject-v4.json)
 * in SQLite: class-2 values open for present subjects; seals go into an
 * existing key only, after the ledger verifies; each refusal is planted in
 * the database as a database writer (or Go's forget) would leave it; and
 * the Python package opens what ward-java sealed, and the other way.
 */
class SubjectKeysTest {
    static final String SCHEMA = """
            CREATE TABLE ward_subject_keys (namespace TEXT, subject TEXT, version BIGINT, first SMALLINT,
              wrapped BLOB, created_at BIGINT, held SMALLINT DEFAULT 0, recovery BLOB, PRIMARY KEY (namespace, subject, version));
            CREATE TABLE ward_subject_tombstones (namespace TEXT, subject TEXT, forgotten_at BIGINT, epoch BIGINT, mac TEXT,
              PRIMARY KEY (namespace, subject));
            CREATE TABLE ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL);
            """;

    JsonNode g;
    Keyring kr;
    SQLiteDataSource db;
    Path file;

    @BeforeEach
    void setUp(@TempDir Path dir) throws Exception {
        g = Vectors.read("field/subject/testdata/subject-v4.json");
        kr = Vectors.keyring(g);
        file = dir.resolve("app.db");
        db = new SQLiteDataSource();
        db.setUrl("jdbc:sqlite:" + file);
        try (Connection c = db.getConnection()) {
            for (String stmt : SCHEMA.split(";")) {
                if (!stmt.isBlank()) {
                    c.createStatement().executeUpdate(stmt);
                }
            }
            for (JsonNode k : g.get("keys")) {
                sql("INSERT INTO ward_subject_keys (namespace, subject, version, wrapped, created_at, held) VALUES (?, ?, ?, ?, 0, ?)",
                        g.get("namespace").asText(), k.get("subject").asText(), k.get("version").asLong(), Vectors.hex(k.get("wrapped_hex").asText()),
                        k.get("held").asInt());
            }
        }
        plantLedger(g.get("ledger"));
    }

    void sql(String statement, Object... args) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement st = c.prepareStatement(statement)) {
            for (int i = 0; i < args.length; i++) {
                st.setObject(i + 1, args[i]);
            }
            st.executeUpdate();
        }
    }

    void plantLedger(JsonNode row) throws SQLException {
        sql("DELETE FROM ward_ledger");
        sql("INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)", row.get("counter").asLong(), row.get("body").asText(), row.get("mac").asText());
    }

    /** The vector's ledger with edit applied, MAC'd as the holder of the keyring file would (counter + 1). */
    void plantEdited(java.util.function.Consumer<ObjectNode> edit) throws Exception {
        ObjectMapper json = new ObjectMapper();
        ObjectNode body = (ObjectNode) json.readTree(g.get("ledger").get("body").asText());
        body.put("counter", body.get("counter").asLong() + 1);
        edit.accept(body);
        String text = json.writeValueAsString(body);
        ObjectNode row = json.createObjectNode().put("counter", body.get("counter").asLong()).put("body", text)
                .put("mac", LedgerTest.mac(kr.stateMacKey(body.get("epoch").asLong(), false), text));
        plantLedger(row);
    }

    Column column(Duration ttl) {
        SubjectKeys keys = new SubjectKeys(db, kr, g.get("namespace").asText(), Ledger.DEFAULT_TABLE, ttl);
        return new Column(kr, g.get("table").asText(), g.get("column").asText(), Vectors.bind(g)).perSubject(keys, Vectors.bind(g)[0]);
    }

    Column column() {
        return column(SubjectKeys.DEFAULT_TTL);
    }

    JsonNode value(String subject) {
        for (JsonNode v : g.get("values")) {
            if (v.get("subject").asText().equals(subject)) {
                return v;
            }
        }
        throw new AssertionError("no value of " + subject);
    }

    @Test
    void opensV4ValuesOfPresentSubjects() {
        Column col = column();
        for (JsonNode v : g.get("values")) {
            byte[] ct = Vectors.hex(v.get("ciphertext_hex").asText());
            assertEquals(Ciphertext.CLASS_SUBJECT, Ciphertext.header(ct).keyClass());
            String subject = v.get("subject").asText();
            if (subject.equals("carol")) { // forgotten: her key is gone
                assertThrows(WardException.SubjectRefused.class, () -> col.open(ct, v.get("row").asLong(), subject));
            } else {
                assertEquals(v.get("plaintext").asText(), new String(col.open(ct, v.get("row").asLong(), subject), StandardCharsets.UTF_8));
                // presented as another subject's, or at another row: refused
                assertThrows(WardException.class, () -> col.open(ct, v.get("row").asLong() + 1, subject));
            }
        }
        JsonNode alice = value("alice");
        assertThrows(WardException.class, () -> col.open(Vectors.hex(alice.get("ciphertext_hex").asText()), alice.get("row").asLong(), "bob"));
    }

    @Test
    void sealsV4IntoAnExistingKeyAndNeverCreatesOne() throws Exception {
        Column col = column();
        byte[] ct = col.seal("from java".getBytes(StandardCharsets.UTF_8), 7L, "alice");
        Ciphertext.Header h = Ciphertext.header(ct);
        assertEquals(4, h.version());
        assertEquals(Ciphertext.CLASS_SUBJECT, h.keyClass());
        assertEquals(g.get("keys").get(0).get("version").asLong(), h.keyId());
        assertEquals("from java", new String(col.open(ct, 7L, "alice"), StandardCharsets.UTF_8));
        assertThrows(WardException.WrongContext.class, () -> col.open(ct, 8L, "alice"));
        assertThrows(WardException.SubjectRefused.class, () -> col.seal(new byte[1], 8L, "dave"));
        assertEquals(g.get("keys").size(), count("ward_subject_keys"));
    }

    int count(String table) throws SQLException {
        try (Connection c = db.getConnection(); var rs = c.createStatement().executeQuery("SELECT count(*) FROM " + table)) {
            rs.next();
            return rs.getInt(1);
        }
    }

    @Test
    void aRolledBackTamperedOrMissingLedgerRefusesSeals() throws Exception {
        plantLedger(g.get("older_ledger"));
        WardException.Ledger e = assertThrows(WardException.Ledger.class, () -> column().seal(new byte[1], 7L, "alice"));
        assertTrue(e.getMessage().contains("older copy"), e.getMessage());
        ObjectNode tampered = ((ObjectNode) g.get("ledger").deepCopy()).put("body", g.get("ledger").get("body").asText().replace("1796000001000", "1796000001001"));
        plantLedger(tampered);
        assertThrows(WardException.Ledger.class, () -> column().seal(new byte[1], 7L, "alice"));
        sql("DROP TABLE ward_ledger");
        assertThrows(WardException.Ledger.class, () -> column().seal(new byte[1], 7L, "alice"));
        // opening needs no ledger: the key row is authenticated by its own seal
        JsonNode alice = value("alice");
        assertEquals(alice.get("plaintext").asText(), new String(column().open(Vectors.hex(alice.get("ciphertext_hex").asText()), alice.get("row").asLong(), "alice"),
                StandardCharsets.UTF_8));
    }

    @Test
    void aTombstoneRefusesSeals() throws Exception {
        sql("INSERT INTO ward_subject_tombstones VALUES (?, 'alice', 0, 1, '00')", g.get("namespace").asText());
        WardException.SubjectRefused e = assertThrows(WardException.SubjectRefused.class, () -> column().seal(new byte[1], 7L, "alice"));
        assertTrue(e.getMessage().contains("forgotten"), e.getMessage());
    }

    @Test
    void aPrivateOrLostKeyIsRefused() throws Exception {
        JsonNode bob = value("bob");
        for (int held : new int[] {1, 2}) {
            sql("UPDATE ward_subject_keys SET held = ? WHERE subject = 'bob'", held);
            Column col = column();
            WardException.SubjectRefused e = assertThrows(WardException.SubjectRefused.class, () -> col.seal(new byte[1], 7L, "bob"));
            assertTrue(e.getMessage().contains(held == 1 ? "private" : "lost"), e.getMessage());
            assertThrows(WardException.SubjectRefused.class, () -> col.open(Vectors.hex(bob.get("ciphertext_hex").asText()), bob.get("row").asLong(), "bob"));
        }
    }

    /** A database writer gives bob alice's key row: it is bound to alice, so it does not open as bob's. */
    @Test
    void aKeyRowMovedToAnotherSubjectDoesNotOpen() throws Exception {
        JsonNode bob = value("bob");
        long bobVersion = Ciphertext.header(Vectors.hex(bob.get("ciphertext_hex").asText())).keyId();
        sql("UPDATE ward_subject_keys SET wrapped = (SELECT wrapped FROM ward_subject_keys WHERE subject = 'alice') WHERE subject = 'bob'");
        assertThrows(WardException.class, () -> column().open(Vectors.hex(bob.get("ciphertext_hex").asText()), bob.get("row").asLong(), "bob"));
        assertTrue(bobVersion > 0);
    }

    /** v3 until the fleet opened v4 (a process still reads v3 only), as Go and Python write. */
    @Test
    void writesV3UntilTheFleetOpensV4() throws Exception {
        plantEdited(b -> b.remove("forms"));
        byte[] ct = column().seal("while a v3-only process runs".getBytes(StandardCharsets.UTF_8), 9L, "alice");
        assertEquals(3, Ciphertext.header(ct).version());
        assertEquals(Ciphertext.CLASS_SUBJECT, Ciphertext.header(ct).keyClass());
        assertEquals("while a v3-only process runs", new String(column().open(ct, 9L, "alice"), StandardCharsets.UTF_8));
        assertThrows(WardException.WrongContext.class, () -> column().open(ct, 10L, "alice"));
    }

    /** After a revocation raised the namespace's key floor, a subject whose newest version is under it is not sealed for. */
    @Test
    void aSealUnderTheKeyFloorIsRefused() throws Exception {
        column().seal(new byte[1], 7L, "alice"); // the golden ledger: no floor
        plantEdited(b -> b.withObjectProperty("counters").put("subject.floor:" + g.get("namespace").asText(), 1));
        WardException.SubjectRefused e = assertThrows(WardException.SubjectRefused.class, () -> column().seal(new byte[1], 8L, "alice"));
        assertTrue(e.getMessage().contains("key floor"), e.getMessage());
        assertEquals(0, SubjectKeys.keyFloor(0));
        assertEquals((1L << 31) + (1L << 23), SubjectKeys.keyFloor(1));
        assertThrows(WardException.SubjectRefused.class, () -> SubjectKeys.keyFloor(256));
    }

    /** A subject forgotten by another process stops opening once the kept key expires (no TTL: at once); within the TTL, as in Go, it still opens. */
    @Test
    void aForgetElsewhereTakesEffectWithinTheTtl() throws Exception {
        JsonNode alice = value("alice");
        byte[] ct = Vectors.hex(alice.get("ciphertext_hex").asText());
        long row = alice.get("row").asLong();
        Column kept = column(Duration.ofHours(1)), uncached = column(Duration.ZERO);
        kept.open(ct, row, "alice");
        uncached.open(ct, row, "alice");
        sql("DELETE FROM ward_subject_keys WHERE subject = 'alice'"); // ward subject forget, elsewhere
        assertEquals(alice.get("plaintext").asText(), new String(kept.open(ct, row, "alice"), StandardCharsets.UTF_8));
        assertThrows(WardException.SubjectRefused.class, () -> uncached.open(ct, row, "alice"));
    }

    @Test
    void aColumnMustBindItsSubjectAndAGrantHasNoSubjectKeys() {
        SubjectKeys keys = new SubjectKeys(db, kr, "users");
        Column plain = new Column(kr, "messages", "body", "owner");
        assertThrows(WardException.Binding.class, () -> plain.perSubject(keys, "user_id"));
        assertThrows(WardException.Binding.class, () -> new SubjectKeys(db, kr, ""));
        assertThrows(WardException.Binding.class, () -> plain.perSubject(keys, "owner").seal(new byte[1], 1L, new Object[] {null}));
    }

    /** The Python package opens what ward-java sealed for a subject, and ward-java what Python sealed (WARD_PY_CLI's interpreter). */
    @Test
    void pythonAndJavaBothWays() throws Exception {
        String cli = System.getenv("WARD_PY_CLI");
        if (cli == null || cli.isEmpty()) {
            if (System.getenv("WARD_CI") != null) {
                fail("WARD_PY_CLI is not set in CI");
            }
            assumeTrue(false, "WARD_PY_CLI is not set");
        }
        Path python = Path.of(cli).resolveSibling("python");
        byte[] fromJava = column().seal("sealed by java".getBytes(StandardCharsets.UTF_8), 11L, "alice");
        Path dir = file.getParent();
        Files.writeString(dir.resolve("in.hex"), java.util.HexFormat.of().formatHex(fromJava));
        Files.write(dir.resolve("keyring.json"), new ObjectMapper().writeValueAsBytes(g.get("keyring")));
        String script = """
                import sqlite3, sys
                from ward import Column, Keyring, MasterKey
                from ward.subject import SubjectKeys
                d = sys.argv[1]
                kr = Keyring.load(d + "/keyring.json", MasterKey.parse(sys.argv[2]))
                conn = sqlite3.connect(d + "/app.db")
                col = Column("messages", "body", kr, bind=["user_id"], subjects=SubjectKeys(conn, kr, "users"), subject_column="user_id")
                sys.stdout.write(col.open_text(bytes.fromhex(open(d + "/in.hex").read()), 11, "alice") + "\\n")
                sys.stdout.write(col.seal(b"sealed by python", 12, "alice").hex())
                """;
        Process p = new ProcessBuilder(python.toString(), "-c", script, dir.toString(), g.get("master_key").asText()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, out);
        String[] lines = out.strip().split("\n");
        assertEquals("sealed by java", lines[0]);
        byte[] fromPython = Vectors.hex(lines[lines.length - 1]);
        assertEquals(Ciphertext.CLASS_SUBJECT, Ciphertext.header(fromPython).keyClass());
        assertArrayEquals("sealed by python".getBytes(StandardCharsets.UTF_8), column().open(fromPython, 12L, "alice"));
    }
}
