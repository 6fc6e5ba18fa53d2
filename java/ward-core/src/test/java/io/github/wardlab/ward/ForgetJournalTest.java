package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.Set;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * The forget journal's reader over Go's vectors: every line of
 * forgetlog/testdata/vectors.json parses and verifies, with its subject
 * hash and tallies; the private rule (current epoch, chain, v1 until the
 * mark); files read as Go's reader reads them; and Go's store's vector
 * (field/subject/testdata/private-journal-v1.json), where a seal under a
 * key a database writer put back is refused only with the journal.
 */
class ForgetJournalTest {
    static final String DB = "db-0123456789abcdef";

    /** The vectors' keys: hash, MAC and one epoch's key, that epoch current or not. */
    static ForgetJournal.Keys keys(JsonNode v, long current) {
        byte[] hash = Vectors.hex(v.get("hash_key").asText()), mac = Vectors.hex(v.get("mac_key").asText());
        byte[] epochKey = Vectors.hex(v.get("epoch_key").asText());
        long epoch = v.get("epoch").asLong();
        return new ForgetJournal.Keys() {
            public byte[] hash() {
                return hash;
            }

            public byte[] mac() {
                return mac;
            }

            public long current() {
                return current;
            }

            public byte[] at(long e) {
                return e == epoch ? epochKey : null;
            }

            public boolean ended(long e) {
                return false;
            }
        };
    }

    static Tally tally(JsonNode t) {
        String head = t.get("head").asText();
        return new Tally(t.get("count").asLong(), t.get("since").asLong(), head.isEmpty() ? null : Vectors.hex(head));
    }

    /** A journal folder holding the lines given, in one file. */
    static Path folder(Path dir, String... lines) throws Exception {
        Path j = Files.createDirectories(dir.resolve("journal"));
        Files.writeString(j.resolve("forgets-test" + ForgetJournal.EXT), String.join("", lines), StandardCharsets.ISO_8859_1);
        return j;
    }

    static Supplier<LedgerState> ledger(Tally t, String... marks) {
        return () -> new LedgerState(DB, 1, 1, Set.of(), java.util.Map.of(), Set.of(), Set.of(marks), java.util.List.of(), java.util.Map.of("subject.private:users", t));
    }

    static Supplier<LedgerState> never() {
        return () -> {
            throw new AssertionError("the ledger was asked: a current epoch's record needs no tally");
        };
    }

    @Test
    void everyVectorLineVerifiesAndChains() throws Exception {
        JsonNode v = Vectors.read("forgetlog/testdata/vectors.json");
        JournalRecords.Checker checker = new JournalRecords.Checker() {
            public byte[] macKey(JournalRecords.Rec r) {
                return r.chained() ? keys(v, 0).at(r.epoch()) : keys(v, 0).mac();
            }

            public boolean ended(long epoch) {
                return false;
            }
        };
        for (JsonNode r : v.get("records")) {
            String line = r.get("line").asText();
            String[] f = line.substring(0, line.length() - 1).split(" ", -1);
            byte[] hash = ForgetJournal.subjectHash(keys(v, 0).hash(), r.get("namespace").asText(), r.get("subject").asText());
            assertEquals(Wire.hex(hash), f[3], r.get("subject").asText());
            JournalRecords recs = new JournalRecords(r.get("database").asText(), checker);
            byte[] b = line.getBytes(StandardCharsets.UTF_8);
            recs.add(b, b.length);
            assertEquals(0, recs.invalid, line);
            if (r.path("chain").asBoolean()) {
                JournalRecords.Rec rec = JournalRecords.parse(f);
                assertEquals(tally(r.get("prev")), rec.prev());
                assertEquals(tally(r.get("next")), rec.next(), "the tally after " + r.get("subject").asText());
            }
            for (int i : new int[] {0, 20, b.length - 3}) { // a changed byte: the tag, the namespace or subject, the MAC
                byte[] m = b.clone();
                m[i] ^= 1;
                JournalRecords bad = new JournalRecords(r.get("database").asText(), checker);
                bad.add(m, m.length);
                assertEquals(1, bad.invalid, "mutated at " + i + ": " + line);
            }
        }
    }

    @Test
    void privateRecordsCountUnderTheCurrentEpochOrOnTheChain(@TempDir Path dir) throws Exception {
        JsonNode v = Vectors.read("forgetlog/testdata/vectors.json");
        JsonNode heidi = null, ivan = null;
        String bob = null;
        StringBuilder lines = new StringBuilder();
        for (JsonNode r : v.get("records")) {
            lines.append(r.get("line").asText());
            switch (r.get("subject").asText()) {
                case "heidi" -> heidi = r;
                case "ivan" -> ivan = r;
                case "bob" -> bob = r.get("line").asText();
                default -> { }
            }
        }
        Path j = folder(dir, lines.toString());
        long epoch = v.get("epoch").asLong();
        ForgetJournal current = new ForgetJournal(j, keys(v, epoch));
        assertTrue(current.isPrivate(DB, "users", "heidi", never()));
        assertTrue(current.isPrivate(DB, "users", "ivan", never()));
        assertFalse(current.isPrivate(DB, "users", "erin", never()), "a forget is not a subject gone private");
        assertFalse(current.isPrivate(DB, "users", "nobody", never()));
        assertFalse(current.isPrivate("db-other", "users", "heidi", never()), "another database's records");

        ForgetJournal older = new ForgetJournal(j, keys(v, epoch + 1)); // the records' epoch is no longer current
        Tally zero = new Tally(0, 0, null);
        assertFalse(older.isPrivate(DB, "users", "heidi", ledger(zero, "integrity:private-v2:users")), "off the chain, not current");
        assertTrue(older.isPrivate(DB, "users", "heidi", ledger(tally(heidi.get("next")), "integrity:private-v2:users")));
        assertFalse(older.isPrivate(DB, "users", "ivan", ledger(tally(heidi.get("next")), "integrity:private-v2:users")));
        assertTrue(older.isPrivate(DB, "users", "ivan", ledger(tally(ivan.get("next")), "integrity:private-v2:users")));
        // bob's v1 record counts until the namespace's mark, and then for nothing
        assertTrue(bob.startsWith("ward-private-v1 "));
        assertTrue(older.isPrivate(DB, "users", "bob", ledger(zero)));
        assertFalse(older.isPrivate(DB, "users", "bob", ledger(zero, "integrity:private-v2:users")));
        assertEquals(0, older.invalid());
    }

    @Test
    void readsCompleteLinesOnlyAndBoundsWhatAWriterPlants(@TempDir Path dir) throws Exception {
        JsonNode v = Vectors.read("forgetlog/testdata/vectors.json");
        String heidi = null;
        for (JsonNode r : v.get("records")) {
            if (r.get("subject").asText().equals("heidi")) {
                heidi = r.get("line").asText();
            }
        }
        String overlong = "ward-private-v2 " + "x".repeat(ForgetJournal.MAX_LINE + 10) + "\n";
        Path j = folder(dir, overlong, heidi.substring(0, 40));
        ForgetJournal journal = new ForgetJournal(j, keys(v, v.get("epoch").asLong()));
        assertFalse(journal.isPrivate(DB, "users", "heidi", never()), "a torn last line");
        assertEquals(1, journal.invalid(), "the overlong line");
        Files.writeString(j.resolve("forgets-test" + ForgetJournal.EXT), heidi.substring(40), StandardOpenOption.APPEND);
        assertTrue(journal.isPrivate(DB, "users", "heidi", never()), "the line once complete");
        Files.createDirectory(j.resolve("planted" + ForgetJournal.EXT));
        WardException e = assertThrows(WardException.CorruptFile.class, () -> journal.isPrivate(DB, "users", "heidi", never()));
        assertTrue(e.getMessage().contains("planted.wfj"), e.getMessage());
        assertThrows(WardException.CorruptFile.class, () -> ForgetJournal.open(dir.resolve("missing"), null));
    }

    /** Go's store's vector, planted in SQLite: SubjectKeys over the key rows and ledger, with the journal or without. */
    @Test
    void refusesASealUnderAPutBackKeyOfAPrivateSubject(@TempDir Path dir) throws Exception {
        JsonNode g = Vectors.read("field/subject/testdata/private-journal-v1.json");
        Keyring kr = Vectors.keyring(g);
        SQLiteDataSource db = new SQLiteDataSource();
        db.setUrl("jdbc:sqlite:" + dir.resolve("app.db"));
        try (Connection c = db.getConnection()) {
            for (String stmt : SubjectKeysTest.SCHEMA.split(";")) {
                if (!stmt.isBlank()) {
                    c.createStatement().executeUpdate(stmt);
                }
            }
            insert(c, "INSERT INTO ward_ledger (id, counter, body, mac) VALUES (1, ?, ?, ?)", g.get("ledger").get("counter").asLong(),
                    g.get("ledger").get("body").asText(), g.get("ledger").get("mac").asText());
            for (JsonNode k : g.get("keys")) {
                insert(c, "INSERT INTO ward_subject_keys (namespace, subject, version, wrapped, created_at, held) VALUES (?, ?, ?, ?, 0, ?)",
                        g.get("namespace").asText(), k.get("subject").asText(), k.get("version").asLong(), Vectors.hex(k.get("wrapped_hex").asText()),
                        k.get("held").asInt());
            }
        }
        StringBuilder lines = new StringBuilder();
        g.get("journal").forEach(l -> lines.append(l.asText()));
        ForgetJournal journal = ForgetJournal.open(folder(dir, lines.toString()), kr);
        SubjectKeys plain = new SubjectKeys(db, kr, "users");
        Column with = new Column(kr, "messages", "body", "user_id").perSubject(plain.withJournal(journal), "user_id");
        Column without = new Column(kr, "messages", "body", "user_id").perSubject(plain, "user_id");
        String database = g.get("database").asText();
        for (JsonNode c : g.get("subjects")) {
            String subject = c.get("subject").asText(), why = subject + ": " + c.get("why").asText();
            assertEquals(c.get("private").asBoolean(), journal.isPrivate(database, "users", subject, () -> Ledger.verify(db, kr, Ledger.DEFAULT_TABLE)), why);
            byte[] pt = "from java".getBytes(StandardCharsets.UTF_8);
            if (c.get("refused").asBoolean()) {
                assertThrows(WardException.SubjectRefused.class, () -> with.seal(pt, 9L, subject), why);
            } else {
                assertArrayEquals(pt, with.open(with.seal(pt, 9L, subject), 9L, subject), why);
            }
        }
        // Without the journal, alice's put-back key (and bob's) would take the seal: what the journal is for.
        assertDoesNotThrow(() -> without.seal("x".getBytes(StandardCharsets.UTF_8), 9L, "alice"));
        assertDoesNotThrow(() -> without.seal("x".getBytes(StandardCharsets.UTF_8), 9L, "bob"));
        assertEquals(0, journal.invalid());
    }

    static void insert(Connection c, String sql, Object... args) throws Exception {
        try (PreparedStatement st = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                st.setObject(i + 1, args[i]);
            }
            st.executeUpdate();
        }
    }
}
