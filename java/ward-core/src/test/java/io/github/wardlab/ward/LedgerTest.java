package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ledger's check: Go's vector, a database writer's changes, and a ledger the Go CLI wrote into SQLite. */
class LedgerTest {
    static JsonNode vectors() throws Exception {
        return Vectors.read("ledger/testdata/ledger-v1.json");
    }

    static String mac(byte[] key, String body) throws Exception {
        Mac h = Mac.getInstance("HmacSHA256");
        h.init(new SecretKeySpec(key, "HmacSHA256"));
        h.update("ward ledger state v1\0".getBytes(StandardCharsets.US_ASCII));
        return HexFormat.of().formatHex(h.doFinal(body.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void goVectorsVerifyAndAnOlderCopyIsRefused() throws Exception {
        JsonNode v = vectors();
        Keyring kr = Vectors.keyring(v);
        JsonNode now = v.get("rows").get(1), old = v.get("rows").get(0);
        LedgerState st = Ledger.verifyRow(kr, 2, now.get("body").asText(), now.get("mac").asText());
        assertEquals("db-0123456789abcdef", st.database());
        assertEquals(2, st.counter());
        assertEquals(3, st.epoch());
        assertFalse(st.allows(LedgerState.CIPHERTEXT_V4));
        // The ledger of counter 1 is authentic, but the file anchors counter 2: a rollback.
        WardException.Ledger e = assertThrows(WardException.Ledger.class, () -> Ledger.verifyRow(kr, 1, old.get("body").asText(), old.get("mac").asText()));
        assertTrue(e.getMessage().contains("older copy"), e.getMessage());
    }

    @Test
    void aDatabaseWritersChangesAreRefused() throws Exception {
        JsonNode v = vectors();
        Keyring kr = Vectors.keyring(v);
        String body = v.get("rows").get(1).get("body").asText(), mac = v.get("rows").get(1).get("mac").asText();
        String forms = body.replace("\"marks\"", "\"forms\":[{\"name\":\"ciphertext:v4\",\"opened\":1764000000000}],\"marks\"");
        assertThrows(WardException.Ledger.class, () -> Ledger.verifyRow(kr, 2, forms, mac)); // a form opened by hand
        LedgerState opened = Ledger.verifyRow(kr, 2, forms, mac(kr.stateMacKey(3, false), forms)); // as the fleet opens it
        assertTrue(opened.allows(LedgerState.CIPHERTEXT_V4));
        assertThrows(WardException.Ledger.class, () -> Ledger.verifyRow(kr, 3, body, mac)); // the counter column moved
        assertThrows(WardException.Ledger.class, () -> Ledger.verifyRow(kr, 2, body, "zz"));
        assertThrows(WardException.Ledger.class, () -> Ledger.verifyRow(kr, 2, "not json", mac));
        assertThrows(WardException.Ledger.class, () -> Ledger.verifyRow(kr, 2, "[]", mac));
        assertThrows(WardException.Ledger.class, () -> Ledger.verifyRow(kr, 2, body.replace("kr-", "kr-0"), mac));
        // Forged under epoch 0, the root alone that every copy of the file derives.
        String epoch0 = body.replace("\"epoch\":3", "\"epoch\":0");
        String forged = mac(kr.stateMacKey(0, true), epoch0);
        assertTrue(assertThrows(WardException.Ledger.class, () -> Ledger.verifyRow(kr, 2, epoch0, forged)).getMessage().contains("epoch 0"));
        // Another database's ledger, MAC'd right: this file anchors only db-0123….
        String other = body.replace("db-0123456789abcdef", "db-fedcba9876543210");
        assertThrows(WardException.StaleKeyring.class, () -> Ledger.verifyRow(kr, 2, other, mac(kr.stateMacKey(3, false), other)));
        // A state epoch this file lacks: written by a newer file.
        String newer = body.replace("\"epoch\":3", "\"epoch\":9");
        assertThrows(WardException.StaleKeyring.class, () -> Ledger.verifyRow(kr, 2, newer, mac));
    }

    /** A column under a ledger's rule writes v4 only once the fleet opened it, v3 until then; opening is never gated. */
    @Test
    void theWriteRule() throws Exception {
        JsonNode v = vectors();
        Keyring kr = Vectors.keyring(v);
        JsonNode now = v.get("rows").get(1);
        LedgerState st = Ledger.verifyRow(kr, 2, now.get("body").asText(), now.get("mac").asText());
        Column col = new Column(kr, "messages", "body", "owner");
        String stored = col.sealText("hi", 1, "alice");
        Column ruled = col.checkedBy(st);
        String v3 = ruled.sealText("hi", 1, "alice");
        assertTrue(v3.startsWith("w3:"), v3);
        assertEquals("hi", col.openText(v3, 1, "alice"));
        assertThrows(WardException.WrongContext.class, () -> col.openText(v3, 2, "alice"));
        assertEquals("hi", ruled.openText(stored, 1, "alice"));
        Column opened = col.checkedBy(new LedgerState(st.database(), st.counter(), st.epoch(), java.util.Set.of(LedgerState.CIPHERTEXT_V4)));
        String v4 = opened.sealText("hi", 1, "alice");
        assertTrue(v4.startsWith("w4:"), v4);
        assertEquals("hi", col.openText(v4, 1, "alice"));
    }

    @Test
    void tableNamesAndLocks() {
        assertThrows(WardException.Ledger.class, () -> Ledger.verify(null, null, "ward_ledger; DROP TABLE x", false));
        assertEquals(" FOR SHARE", Ledger.shareLock("PostgreSQL"));
        assertEquals(" LOCK IN SHARE MODE", Ledger.shareLock("MariaDB"));
        assertEquals(" LOCK IN SHARE MODE", Ledger.shareLock("MySQL"));
        assertEquals("", Ledger.shareLock("SQLite"));
    }

    static String go(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(System.getenv("WARD_GO_CLI")));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        return out;
    }

    /** The Go CLI writes the ledger into a SQLite database (a key added with --db); Java reads and verifies it over JDBC. */
    @Test
    void aLedgerTheGoCliWroteVerifiesOverJdbc(@TempDir Path dir) throws Exception {
        Vectors.requireGoCli();
        Path mk = dir.resolve("mk.b64"), kr = dir.resolve("kr.json"), db = Files.createFile(dir.resolve("app.db"));
        go("keyring", "gen-master-key", "--out", mk.toString());
        go("keyring", "new", "--keyring", kr.toString(), "--master-key-file", mk.toString());
        Keyring before = Keyring.load(Files.copy(kr, dir.resolve("kr-before.json")), MasterKey.load(mk)); // a copy from before the database's ledger
        Keyring following = Keyring.load(kr, MasterKey.load(mk)); // the file itself, loaded before the ledger: it reads the newer file
        go("keyring", "add", "--promote", "--keyring", kr.toString(), "--master-key-file", mk.toString(), "--db", "sqlite:" + db);
        Keyring now = Keyring.load(kr, MasterKey.load(mk));
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db)) {
            LedgerState st = Ledger.verify(c, now);
            assertTrue(st.database().startsWith("db-"), st.database());
            assertEquals(1, st.counter());
            assertThrows(WardException.StaleKeyring.class, () -> Ledger.verify(c, before));
            assertEquals(st, Ledger.verify(c, following));
            assertEquals(now.generation(), following.generation());
            c.createStatement().executeUpdate("UPDATE ward_ledger SET body = replace(body, '\"counter\":1', '\"counter\":1 ')");
            assertThrows(WardException.Ledger.class, () -> Ledger.verify(c, now));
            c.createStatement().executeUpdate("DELETE FROM ward_ledger");
            assertTrue(assertThrows(WardException.Ledger.class, () -> Ledger.verify(c, now)).getMessage().contains("empty"));
            c.createStatement().executeUpdate("DROP TABLE ward_ledger");
            assertThrows(WardException.Ledger.class, () -> Ledger.verify(c, now, "ward_ledger", true));
        }
    }
}
