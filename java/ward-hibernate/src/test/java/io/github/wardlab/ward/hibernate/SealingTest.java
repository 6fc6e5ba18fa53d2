package io.github.wardlab.ward.hibernate;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.WardException;
import io.github.wardlab.ward.hibernate.Entities.Account;
import io.github.wardlab.ward.hibernate.Entities.Message;
import io.github.wardlab.ward.hibernate.Entities.Note;
import io.github.wardlab.ward.hibernate.Entities.Ticket;
import jakarta.persistence.criteria.CriteriaBuilder;
import jakarta.persistence.criteria.CriteriaUpdate;
import jakarta.persistence.criteria.Root;
import io.github.wardlab.ward.testdb.TestDatabases;
import io.github.wardlab.ward.testdb.TestDatabases.Db;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.hibernate.Session;
import org.hibernate.SessionFactory;
import org.hibernate.cfg.Configuration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every write path of Hibernate on a sealed column, on H2, MariaDB and
 * PostgreSQL (CI's, over their Unix sockets): persist, a flush
 * of a changed entity, merge of a detached one, and the paths that bypass
 * entity listeners (HQL and Criteria bulk updates, native SQL), refused by
 * the column's CHECK when they would store plaintext; what a database
 * writer does to a row (copy a value, re-point its owner) refused on load.
 */
class SealingTest {
    static final String DATABASE = "db-0123456789abcdef";
    Keyring keyring;
    SessionFactory sf;
    Db db;

    static Keyring keyring() throws Exception {
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        var file = json.readTree(Path.of("..", "..", "field", "testdata", "context-v4.json").toFile());
        return Keyring.parse(json.writeValueAsBytes(file.get("keyring")), MasterKey.parse(file.get("master_key").asText()));
    }

    /** The databases each test runs on (TestDatabases.kinds). */
    static List<String> databases() {
        return TestDatabases.kinds();
    }

    void open(String kind) throws Exception {
        open(kind, java.util.Map.of(WardHibernate.DATABASE, DATABASE));
    }

    /** A session factory on a fresh database of kind, with ward's settings besides the keyring. */
    void open(String kind, java.util.Map<String, Object> settings) throws Exception {
        keyring = keyring();
        db = TestDatabases.create(kind, "ward_java_");
        Configuration cfg = new Configuration().addAnnotatedClass(Message.class).addAnnotatedClass(Note.class).addAnnotatedClass(Ticket.class)
                .addAnnotatedClass(Account.class);
        cfg.setProperty("hibernate.connection.url", db.url());
        cfg.setProperty("hibernate.connection.username", db.user());
        cfg.setProperty("hibernate.connection.password", db.password());
        cfg.setProperty("hibernate.hbm2ddl.auto", "create-drop");
        cfg.setProperty("hibernate.generate_statistics", "true");
        cfg.getProperties().put(WardHibernate.KEYRING, keyring);
        cfg.getProperties().putAll(settings);
        sf = cfg.buildSessionFactory();
    }

    @AfterEach
    void close() {
        if (sf != null) {
            sf.close();
            sf = null;
        }
        if (db != null) {
            db.drop().run();
            db = null;
        }
    }

    void tx(Consumer<Session> fn) {
        sf.inTransaction(fn);
    }

    String stored(String table, String column, long id) throws Exception {
        try (Connection c = db.connect(); ResultSet rs = c.createStatement().executeQuery("SELECT " + column + " FROM " + table + " WHERE id = " + id)) {
            assertTrue(rs.next());
            return rs.getString(1);
        }
    }

    void sql(String update) throws Exception {
        try (Connection c = db.connect()) {
            c.createStatement().executeUpdate(update);
        }
    }

    /** The WardException a failed load carries (Hibernate may wrap it). */
    static WardException cause(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof WardException w) {
                return w;
            }
        }
        fail("no WardException in " + t);
        return null;
    }

    /** The fleet forms of the mapped entities: one per @Sealed attribute, by table and column. */
    @org.junit.jupiter.api.Test
    void fleetForms() throws Exception {
        open("h2");
        assertEquals(List.of("sealed:accounts.email", "sealed:messages.body", "sealed:notes.text", "sealed:tickets.subject"), WardHibernate.forms(sf));
    }

    @ParameterizedTest
    @MethodSource("databases")
    void persistFlushAndMerge(String kind) throws Exception {
        open(kind);
        tx(s -> s.persist(new Message(1, 7, 1001, "user", "今日の予定は歯医者です")));
        String ct = stored("messages", "body", 1);
        assertTrue(ct.startsWith("w4:") && !ct.contains("歯医者"), ct);
        assertEquals(ct, stored("messages", "body", 1));
        var stats = sf.getStatistics();
        stats.clear();
        tx(s -> assertEquals("今日の予定は歯医者です", s.find(Message.class, 1L).body)); // loaded, nothing changed
        assertEquals(0, stats.getEntityUpdateCount(), "a flush with nothing changed wrote");
        assertEquals(ct, stored("messages", "body", 1));
        tx(s -> s.find(Message.class, 1L).body = "and then the library");
        assertEquals(1, stats.getEntityUpdateCount());
        tx(s -> { // written, then flushed again in the same session: no second write
            Message m = s.find(Message.class, 1L);
            m.body = "and then the library, again";
            s.flush();
            s.flush();
            assertEquals("and then the library, again", m.body); // the entity keeps its plaintext
        });
        assertEquals(2, stats.getEntityUpdateCount());
        tx(s -> {
            s.persist(new Message(3, 9, 1003, "user", "persisted, then flushed twice"));
            s.flush();
            s.flush();
        });
        assertEquals(2, stats.getEntityUpdateCount());
        assertFalse(stored("messages", "body", 1).equals(ct));
        Message detached = sf.fromTransaction(s -> s.find(Message.class, 1L));
        detached.body = "merged";
        tx(s -> s.merge(detached));
        tx(s -> assertEquals("merged", s.find(Message.class, 1L).body));
        Message more = new Message(2, 7, 1001, "assistant", "a reply");
        tx(s -> s.merge(more)); // merge of a new entity: an insert
        tx(s -> assertEquals("a reply", s.find(Message.class, 2L).body));
        List<Message> all = sf.fromTransaction(s -> s.createSelectionQuery("from Message order by id", Message.class).getResultList());
        assertEquals(List.of("merged", "a reply", "persisted, then flushed twice"), all.stream().map(m -> m.body).toList());
    }

    @ParameterizedTest
    @MethodSource("databases")
    void databaseWriterIsRefusedOnLoad(String kind) throws Exception {
        open(kind);
        tx(s -> {
            s.persist(new Message(1, 7, 1001, "user", "alice's"));
            s.persist(new Message(2, 8, 1002, "user", "bob's"));
        });
        sql("UPDATE messages SET body = (SELECT body FROM messages WHERE id = 1) WHERE id = 2"); // copied to another row
        assertTrue(cause(assertThrows(RuntimeException.class, () -> tx(s -> s.find(Message.class, 2L)))) instanceof WardException.WrongContext);
        sql("UPDATE messages SET user_id = 1002 WHERE id = 1"); // re-pointed to another owner
        assertTrue(cause(assertThrows(RuntimeException.class, () -> tx(s -> s.find(Message.class, 1L)))) instanceof WardException.WrongContext);
    }

    @ParameterizedTest
    @MethodSource("databases")
    void bulkPathsCannotStorePlaintext(String kind) throws Exception {
        open(kind);
        tx(s -> s.persist(new Message(1, 7, 1001, "user", "hello")));
        refusedByTheCheck(assertThrows(RuntimeException.class, () -> tx(s -> s.createMutationQuery("update Message set body = 'plaintext'").executeUpdate())));
        refusedByTheCheck(assertThrows(RuntimeException.class, () -> tx(s -> {
            CriteriaBuilder cb = s.getCriteriaBuilder();
            CriteriaUpdate<Message> u = cb.createCriteriaUpdate(Message.class);
            Root<Message> m = u.from(Message.class);
            u.set(m.<String>get("body"), "plaintext");
            s.createMutationQuery(u).executeUpdate();
        })));
        assertThrows(Exception.class, () -> sql("UPDATE messages SET body = 'plaintext'"));
        tx(s -> assertEquals("hello", s.find(Message.class, 1L).body));
        assertEquals(WardHibernate.checkCondition("body"), "(body IS NULL OR body LIKE 'w3:%' OR body LIKE 'w4:%')");
    }

    /** The database's CHECK refused the statement: a constraint violation, not another failure. */
    static void refusedByTheCheck(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof org.hibernate.exception.ConstraintViolationException) {
                return;
            }
        }
        fail("not refused by the column's CHECK: " + t);
    }

    @ParameterizedTest
    @MethodSource("databases")
    void identityIdsAreRefused(String kind) throws Exception {
        open(kind);
        assertTrue(cause(assertThrows(RuntimeException.class, () -> tx(s -> s.persist(new Ticket("subject"))))) instanceof WardException.Binding);
    }

    @ParameterizedTest
    @MethodSource("databases")
    void mixedMode(String kind) throws Exception {
        open(kind);
        sql("INSERT INTO notes (id, text) VALUES (1, 'written before ward')");
        tx(s -> s.persist(new Note(2, "written after")));
        assertTrue(stored("notes", "text", 2).startsWith("w4:"));
        tx(s -> {
            assertEquals("written before ward", s.find(Note.class, 1L).text);
            assertEquals("written after", s.find(Note.class, 2L).text);
        });
        tx(s -> s.find(Note.class, 1L).text = "sealed now");
        assertTrue(stored("notes", "text", 1).startsWith("w4:"));
    }

    /** A value the Go CLI sealed for the same row loads through Hibernate (WARD_GO_CLI). */
    @ParameterizedTest
    @MethodSource("databases")
    void goSealedValuesLoad(String kind, @TempDir Path dir) throws Exception {
        String cli = System.getenv("WARD_GO_CLI");
        if (cli == null || cli.isEmpty()) {
            if (System.getenv("WARD_CI") != null) {
                fail("WARD_GO_CLI is not set in CI");
            }
            org.junit.jupiter.api.Assumptions.abort("WARD_GO_CLI is not set");
        }
        open(kind);
        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        var file = json.readTree(Path.of("..", "..", "field", "testdata", "context-v4.json").toFile());
        Path kr = java.nio.file.Files.write(dir.resolve("kr.json"), json.writeValueAsBytes(file.get("keyring")));
        Path mk = java.nio.file.Files.writeString(dir.resolve("mk.b64"), file.get("master_key").asText());
        List<String> cmd = new ArrayList<>(List.of(cli, "encrypt", "--keyring", kr.toString(), "--master-key-file", mk.toString(),
                "--table", "messages", "--column", "body", "--row", "5", "--bind", "conversation_id=7", "--bind", "user_id=1001", "--bind", "role=user"));
        Process p = new ProcessBuilder(cmd).start();
        p.getOutputStream().write("sealed by Go".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        p.getOutputStream().close();
        String ct = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.US_ASCII).strip();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), new String(p.getErrorStream().readAllBytes()));
        sql("INSERT INTO messages (id, conversation_id, user_id, role, body) VALUES (5, 7, 1001, 'user', '" + ct + "')");
        tx(s -> {
            Message m = s.find(Message.class, 5L);
            assertNotNull(m);
            assertEquals("sealed by Go", m.body);
        });
    }

    /** Blind indexes: written with each insert and update from the plaintext, found by equality (folded), as Go computes them. */
    @ParameterizedTest
    @MethodSource("databases")
    void blindIndexEqualityQueries(String kind) throws Exception {
        open(kind);
        tx(s -> {
            s.persist(new Account(1, "Alice@Example.com"));
            s.persist(new Account(2, "bob@example.com"));
        });
        java.util.function.Function<String, List<Long>> find = email -> sf.fromTransaction(s -> s.createSelectionQuery(
                "select a.id from Account a where a.emailIdx in :idx order by a.id", Long.class)
                .setParameter("idx", WardHibernate.blindIndexes(sf, Account.class, "emailIdx", email)).getResultList());
        assertEquals(List.of(1L), find.apply("  ALICE@example.COM "));
        assertEquals(List.of(2L), find.apply("bob@example.com"));
        assertEquals(List.of(), find.apply("carol@example.com"));
        // The stored index is the Go library's field.NewIndex (v2, fold) of the sealed column.
        io.github.wardlab.ward.BlindIndex want = io.github.wardlab.ward.BlindIndex.v2(keyring, "accounts", "email",
                new io.github.wardlab.ward.BlindIndex.Options(DATABASE, null, io.github.wardlab.ward.Normalizer.FOLD, 0, 0));
        try (Connection c = db.connect(); ResultSet rs = c.createStatement().executeQuery("SELECT email_idx, email FROM accounts WHERE id = 1")) {
            assertTrue(rs.next());
            org.junit.jupiter.api.Assertions.assertArrayEquals(want.compute("alice@example.com"), rs.getBytes(1));
            assertTrue(rs.getString(2).startsWith("w4:"));
        }
        var stats = sf.getStatistics();
        stats.clear();
        tx(s -> org.junit.jupiter.api.Assertions.assertArrayEquals(want.compute("alice@example.com"), s.find(Account.class, 1L).emailIdx));
        assertEquals(0, stats.getEntityUpdateCount(), "a flush with nothing changed wrote");
        tx(s -> s.find(Account.class, 1L).email = "alice@new.example"); // the index follows the value
        assertEquals(List.of(), find.apply("alice@example.com"));
        assertEquals(List.of(1L), find.apply("ALICE@new.example"));
        tx(s -> s.find(Account.class, 2L).email = null);
        assertEquals(List.of(), find.apply("bob@example.com"));
        assertThrows(WardException.Binding.class, () -> WardHibernate.blindIndexes(sf, Account.class, "email", "x"));
    }

    /**
     * Under a verified ledger (WardHibernate.LEDGER): a fleet that has not
     * opened ciphertext v4 gets v3 writes (what its v3-only processes read),
     * one that has gets v4; indexes take the ledger's database ID.
     */
    @ParameterizedTest
    @MethodSource("databases")
    void theLedgersWriteRule(String kind) throws Exception {
        io.github.wardlab.ward.LedgerState closed = new io.github.wardlab.ward.LedgerState(DATABASE, 2, 3, java.util.Set.of());
        open(kind, java.util.Map.of(WardHibernate.LEDGER, closed));
        tx(s -> s.persist(new Message(1, 7, 1001, "user", "not yet")));
        assertTrue(stored("messages", "body", 1).startsWith("w3:"), stored("messages", "body", 1));
        assertEquals("not yet", sf.fromTransaction(s -> s.find(Message.class, 1L).body));
        close();
        io.github.wardlab.ward.LedgerState open = new io.github.wardlab.ward.LedgerState(DATABASE, 2, 3, java.util.Set.of(io.github.wardlab.ward.LedgerState.CIPHERTEXT_V4));
        open(kind, java.util.Map.of(WardHibernate.LEDGER, open));
        tx(s -> {
            s.persist(new Message(1, 7, 1001, "user", "now"));
            s.persist(new Account(1, "alice@example.com"));
        });
        assertTrue(stored("messages", "body", 1).startsWith("w4:"));
        assertEquals(1, WardHibernate.blindIndexes(sf, Account.class, "emailIdx", "alice@example.com").size());
        close();
        open(kind, java.util.Map.of(WardHibernate.LEDGER, open, WardHibernate.DATABASE, "db-ffffffffffffffff"));
        assertThrows(WardException.Binding.class, () -> tx(s -> s.persist(new Account(2, "bob@example.com"))));
    }

    /** A ledger recording the index of accounts.email under epoch, in another shape when size is not 16 or spare is set. */
    static io.github.wardlab.ward.LedgerState recording(long epoch, int size, String spare) {
        var index = new io.github.wardlab.ward.LedgerState.Index("accounts", "email", "email", "email_idx", spare, "fold", 1, size, epoch, 0, null);
        return new io.github.wardlab.ward.LedgerState(DATABASE, 2, 3, java.util.Set.of(io.github.wardlab.ward.LedgerState.CIPHERTEXT_V4), java.util.Map.of(),
                java.util.Set.of(), java.util.Set.of(), List.of(index), java.util.Map.of());
    }

    /**
     * The index's epoch is the ledger's, as Go's Ledger.Index writes and looks
     * up (not the keyring's primary, after a rotation Go's index has not
     * followed yet); a record of another shape or of a re-keyable index is
     * refused, nothing stored.
     */
    @ParameterizedTest
    @MethodSource("databases")
    void theIndexTakesTheEpochTheLedgerRecords(String kind) throws Exception {
        var file = new com.fasterxml.jackson.databind.ObjectMapper().readTree(Path.of("..", "..", "field", "testdata", "blind-index-v2.json").toFile());
        Keyring two = Keyring.parse(new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsBytes(file.get("keyring")),
                MasterKey.parse(file.get("master_key").asText()));
        long older = two.keys().keySet().stream().filter(id -> id != two.primary().id()).findFirst().orElseThrow();
        open(kind, java.util.Map.of(WardHibernate.KEYRING, two, WardHibernate.LEDGER, recording(older, 16, "")));
        tx(s -> s.persist(new Account(1, "alice@example.com")));
        byte[] want = io.github.wardlab.ward.BlindIndex.v2(two, "accounts", "email",
                new io.github.wardlab.ward.BlindIndex.Options(DATABASE, "email", io.github.wardlab.ward.Normalizer.FOLD, 16, older)).compute("alice@example.com");
        try (Connection c = db.connect(); ResultSet rs = c.createStatement().executeQuery("SELECT email_idx FROM accounts WHERE id = 1")) {
            assertTrue(rs.next());
            assertArrayEquals(want, rs.getBytes(1));
        }
        assertArrayEquals(want, WardHibernate.blindIndex(sf, Account.class, "emailIdx", "alice@example.com"));
        assertArrayEquals(want, WardHibernate.blindIndexes(sf, Account.class, "emailIdx", "alice@example.com").get(0));
        close();
        for (var other : List.of(recording(older, 32, ""), recording(older, 16, "email_idx2"))) {
            open(kind, java.util.Map.of(WardHibernate.KEYRING, two, WardHibernate.LEDGER, other));
            assertThrows(WardException.Binding.class, () -> tx(s -> s.persist(new Account(2, "bob@example.com"))));
            assertEquals(0L, (long) sf.fromTransaction(s -> s.createSelectionQuery("select count(a) from Account a", Long.class).getSingleResult()));
            close();
        }
    }
}
