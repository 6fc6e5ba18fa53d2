package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * The process registry: Go's row vectors (v1 and v2 MACs), and a JVM
 * process in a fleet the Go CLI runs — listed as a valid row with its keys
 * and forms, a rotation waiting for it until it leaves, a vanished row
 * registered again, v2 rows once the fleet opened integrity:v2 — and the
 * joins refused while the database depends on a form it lacks.
 */
class FleetMemberTest {
    static final ObjectMapper JSON = new ObjectMapper();

    static FleetRow row(JsonNode p) {
        List<Long> keys = new ArrayList<>();
        p.get("keys").forEach(k -> keys.add(k.asLong()));
        List<String> forms = new ArrayList<>();
        p.path("forms").forEach(f -> forms.add(f.asText()));
        return new FleetRow(p.get("id").asText(), p.get("host").asText(), p.get("pid").asLong(), p.get("keyring").asText(), p.get("generation").asLong(),
                keys, Instant.parse(p.get("started").asText()).toEpochMilli(), Instant.parse(p.get("seen").asText()).toEpochMilli(),
                p.get("exited").asBoolean(), forms);
    }

    @Test
    void goldenRowMacs() throws Exception {
        JsonNode v1 = Vectors.read("fleet/testdata/registry-v1.json");
        Keyring kr1 = Vectors.keyring(v1);
        for (JsonNode r : v1.get("rows")) {
            assertEquals(r.get("mac_hex").asText(), row(r.get("process")).macV1(kr1));
        }
        JsonNode v2 = Vectors.read("fleet/testdata/registry-v2.json");
        Keyring kr2 = Vectors.keyring(v2);
        for (JsonNode r : v2.get("rows")) {
            String mac = r.get("mac_hex").asText();
            long epoch = Long.parseLong(mac.substring(3, 11), 16);
            assertEquals(mac, row(r.get("process")).macV2(kr2, epoch, v2.get("database").asText()));
            assertNotEquals(mac, row(r.get("process")).macV2(kr2, epoch, "db-ffffffffffffffff")); // bound to its database
        }
    }

    /** The Go CLI's exit code and output. */
    static Object[] goRun(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(System.getenv("WARD_GO_CLI")));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new Object[] {p.waitFor(), out};
    }

    /** This process's row as `ward fleet --json` lists it, or null. */
    static JsonNode listed(String id, String... keys) throws Exception {
        List<String> args = new ArrayList<>(List.of("fleet", "--json"));
        args.addAll(List.of(keys));
        JsonNode all = JSON.readTree(LedgerTest.go(args.toArray(String[]::new)));
        for (JsonNode p : all.get(0).get("processes")) {
            if (p.get("id").asText().equals(id)) {
                return p;
            }
        }
        return null;
    }

    /**
     * A JVM process whose keyring cannot follow the file (parsed from bytes)
     * holds a rotation back, named, until it leaves; one loaded from the file
     * follows it: its heartbeat reads the newer file the ledger names, reports
     * the new key, and the rotation completes while it runs.
     */
    @Test
    void aRotationWaitsForAJvmProcessAndOneLoadedFromTheFileFollowsIt(@TempDir Path dir) throws Exception {
        Vectors.requireGoCli();
        Path mk = dir.resolve("mk.b64"), krFile = dir.resolve("kr.json"), db = Files.createFile(dir.resolve("app.db"));
        LedgerTest.go("keyring", "gen-master-key", "--out", mk.toString());
        LedgerTest.go("keyring", "new", "--keyring", krFile.toString(), "--master-key-file", mk.toString());
        LedgerTest.go("keyring", "add", "--promote", "--keyring", krFile.toString(), "--master-key-file", mk.toString(), "--db", "sqlite:" + db);
        SQLiteDataSource ds = new SQLiteDataSource();
        ds.setUrl("jdbc:sqlite:" + db);
        String[] keys = {"--keyring", krFile.toString(), "--master-key-file", mk.toString(), "--db", "sqlite:" + db};
        List<String> rotate = new ArrayList<>(List.of("keyring", "rotate", "--wait", "3s"));
        rotate.addAll(List.of(keys));

        Keyring fixed = Keyring.parse(Files.readAllBytes(krFile), MasterKey.load(mk)); // never re-reads the file
        List<WardException> errors = new CopyOnWriteArrayList<>();
        FleetMember m = FleetMember.join(ds, fixed, "ward_fleet", "ward_ledger", List.of("sealed:notes.body"), Duration.ofMillis(200), errors::add);
        JsonNode p = listed(m.id(), keys);
        assertTrue(p != null && !p.path("tampered").asBoolean() && !p.get("exited").asBoolean(), String.valueOf(p));
        assertEquals(ProcessHandle.current().pid(), p.get("pid").asLong());
        assertTrue(p.get("keys").toString().contains(Long.toString(fixed.primary().id())), p.toString());
        assertTrue(p.get("forms").toString().contains("sealed:notes.body") && p.get("forms").toString().contains("ciphertext:v4"), p.toString());
        Object[] waited = goRun(rotate.toArray(String[]::new));
        assertNotEquals(0, waited[0], (String) waited[1]);
        assertTrue(((String) waited[1]).contains(m.id()), (String) waited[1]);
        // A database writer deletes the row: the next heartbeat registers again, and says the ledger is newer than its keyring.
        try (Connection c = ds.getConnection()) {
            c.createStatement().executeUpdate("DELETE FROM ward_fleet");
        }
        assertThrows(WardException.StaleKeyring.class, m::beat);
        assertTrue(listed(m.id(), keys) != null);
        m.close();
        assertTrue(listed(m.id(), keys).get("exited").asBoolean());

        Keyring loaded = Keyring.load(krFile, MasterKey.load(mk));
        long before = loaded.primary().id();
        try (FleetMember follower = FleetMember.join(ds, loaded, "ward_fleet", "ward_ledger", List.of(), Duration.ofMillis(200), errors::add)) {
            rotate.set(3, "120s");
            Object[] rotated = goRun(rotate.toArray(String[]::new));
            assertEquals(0, rotated[0], (String) rotated[1]);
            follower.beat();
            assertNotEquals(before, loaded.primary().id());
            assertTrue(listed(follower.id(), keys).get("keys").toString().contains(Long.toString(loaded.primary().id())));
        }
    }

    /** Go's subject vector in SQLite, its ledger's forms as edit leaves them (MAC'd as the keyring's holder would). */
    static SQLiteDataSource vectorDatabase(Path dir, JsonNode g, Keyring kr, java.util.function.Consumer<ArrayNode> edit) throws Exception {
        SQLiteDataSource ds = new SQLiteDataSource();
        ds.setUrl("jdbc:sqlite:" + dir.resolve("v.db"));
        ObjectNode body = (ObjectNode) JSON.readTree(g.get("ledger").get("body").asText());
        body.put("counter", body.get("counter").asLong() + 1);
        edit.accept(body.withArrayProperty("forms"));
        String text = JSON.writeValueAsString(body);
        try (Connection c = ds.getConnection()) {
            c.createStatement().executeUpdate("CREATE TABLE IF NOT EXISTS ward_ledger (id INTEGER PRIMARY KEY, counter BIGINT NOT NULL, body TEXT NOT NULL, mac TEXT NOT NULL)");
            c.createStatement().executeUpdate("DELETE FROM ward_ledger");
            var st = c.prepareStatement("INSERT INTO ward_ledger VALUES (1, ?, ?, ?)");
            st.setLong(1, body.get("counter").asLong());
            st.setString(2, text);
            st.setString(3, LedgerTest.mac(kr.stateMacKey(body.get("epoch").asLong(), false), text));
            st.executeUpdate();
        }
        return ds;
    }

    @Test
    void aJoinIsRefusedWhileTheDatabaseDependsOnAFormItLacks(@TempDir Path dir) throws Exception {
        JsonNode g = Vectors.read("field/subject/testdata/subject-v4.json");
        Keyring kr = Vectors.keyring(g);
        for (boolean opened : new boolean[] {true, false}) {
            SQLiteDataSource ds = vectorDatabase(dir, g, kr, forms -> {
                ObjectNode f = forms.addObject().put("name", "sealed:notes.body").put("release", "ward 2026.12").put("since", 1796000000000L);
                if (opened) {
                    f.put("opened", 1796000002000L);
                }
            });
            WardException.FormsMissing e = assertThrows(WardException.FormsMissing.class, () -> FleetMember.join(ds, kr, List.of(), null));
            assertTrue(e.getMessage().contains("sealed:notes.body (" + (opened ? "open" : "waiting") + ")"), e.getMessage());
            try (Connection c = ds.getConnection(); ResultSet rs = c.createStatement().executeQuery("SELECT count(*) FROM ward_fleet WHERE exited = 0")) {
                rs.next();
                assertEquals(0, rs.getInt(1)); // nothing left registered
            }
            try (FleetMember m = FleetMember.join(ds, kr, List.of("sealed:notes.body"), null)) {
                assertTrue(m.forms().contains("sealed:notes.body"));
                try (Connection c = ds.getConnection()) { // marked exited behind its back: the new row is a duplicate, ignored
                    c.createStatement().executeUpdate("UPDATE ward_fleet SET exited = 1 WHERE id = '" + m.id() + "'");
                }
                m.beat();
            }
        }
        assertThrows(WardException.Binding.class, () -> FleetMember.join(new SQLiteDataSource(), kr, List.of("no-kind"), null));
        assertThrows(WardException.Binding.class, () -> FleetMember.join(new SQLiteDataSource(), kr, List.of("sealed:a,b"), null));
        assertThrows(WardException.Binding.class, () -> FleetMember.join(new SQLiteDataSource(), kr, "ward_fleet", "ward_ledger", List.of(), Duration.ZERO, null));
        assertThrows(WardException.Binding.class, () -> FleetMember.join(new SQLiteDataSource(), kr, "fleet; DROP TABLE x", "ward_ledger", List.of(),
                Duration.ofSeconds(1), null));
    }

    /** Once the fleet opened integrity:v2, the row is v2 (bound to the database), and the Go CLI verifies it. */
    @Test
    void rowsAreV2OnceTheFleetOpenedIntegrityV2(@TempDir Path dir) throws Exception {
        JsonNode g = Vectors.read("field/subject/testdata/subject-v4.json");
        Keyring kr = Vectors.keyring(g);
        SQLiteDataSource ds = vectorDatabase(dir, g, kr,
                forms -> forms.addObject().put("name", FleetMember.INTEGRITY_V2).put("release", "ward 2026.12").put("since", 1796000000000L).put("opened", 1796000002000L));
        try (FleetMember m = FleetMember.join(ds, kr, List.of(), null)) {
            String mac;
            try (Connection c = ds.getConnection(); ResultSet rs = c.createStatement().executeQuery("SELECT mac FROM ward_fleet")) {
                rs.next();
                mac = rs.getString(1);
            }
            assertTrue(mac.startsWith(String.format("v2:%08x:", kr.primary().id())), mac);
            String cli = System.getenv("WARD_GO_CLI");
            if (cli != null && !cli.isEmpty()) {
                Path krFile = Files.write(dir.resolve("kr.json"), JSON.writeValueAsBytes(g.get("keyring")));
                Path mk = Files.writeString(dir.resolve("mk"), g.get("master_key").asText());
                JsonNode p = listed(m.id(), "--keyring", krFile.toString(), "--master-key-file", mk.toString(), "--db", "sqlite:" + dir.resolve("v.db"));
                assertFalse(p.path("tampered").asBoolean(), p.toString());
            }
        }
    }

    /**
     * ready, Go's Registry.Ready for a writer that is not registered (the
     * command line's --db): no registry, or every live registration declaring
     * the form, says yes; a valid row without it, a row of a release from
     * before forms, a row failing its MAC, or the ledger's wait for the form
     * says no; the ledger's opened form says yes whatever the rows.
     */
    @Test
    void readyAsGoDecidesForAnUnregisteredWriter(@TempDir Path dir) throws Exception {
        JsonNode g = Vectors.read("field/subject/testdata/subject-v4.json");
        Keyring kr = Vectors.keyring(g);
        SQLiteDataSource ds = vectorDatabase(dir, g, kr, forms -> forms.removeAll()); // the vector's ledger opened v4: here it records no wait
        String v4 = LedgerState.CIPHERTEXT_V4;
        try (Connection c = ds.getConnection()) {
            LedgerState st = Ledger.verify(c, kr);
            assertTrue(FleetMember.ready(c, kr, st, "ward_fleet", v4)); // no process ever registered
            try (FleetMember m = FleetMember.join(ds, kr, List.of(), null)) {
                assertTrue(FleetMember.ready(c, kr, st, "ward_fleet", v4));
                long now = System.currentTimeMillis();
                FleetRow old = new FleetRow("p-00000000000000aa", "old", 7, kr.id(), kr.generation(), List.of(kr.primary().id()), now, now, false,
                        List.of("ciphertext:v3"));
                var ins = c.prepareStatement("INSERT INTO ward_fleet VALUES (?, 'old', 7, ?, ?, ?, ?, ?, 0, ?, ?)");
                ins.setString(1, old.id());
                ins.setString(2, kr.id());
                ins.setLong(3, kr.generation());
                ins.setString(4, old.keysText());
                ins.setLong(5, now);
                ins.setLong(6, now);
                ins.setString(7, old.macV1(kr));
                ins.setString(8, old.formsText());
                ins.executeUpdate();
                assertFalse(FleetMember.ready(c, kr, st, "ward_fleet", v4)); // a valid row that reads v3 only
                assertTrue(FleetMember.ready(c, kr, st, "ward_fleet", "ciphertext:v3"));
                c.createStatement().executeUpdate("UPDATE ward_fleet SET exited = 1 WHERE id = '" + old.id() + "'");
                assertTrue(FleetMember.ready(c, kr, st, "ward_fleet", v4)); // it left
                c.createStatement().executeUpdate("UPDATE ward_fleet SET host = 'elsewhere' WHERE id = '" + m.id() + "'");
                assertFalse(FleetMember.ready(c, kr, st, "ward_fleet", v4)); // fails its MAC
            }
        }
        SQLiteDataSource waiting = vectorDatabase(dir, g, kr, forms -> forms.removeAll().addObject().put("name", v4).put("release", "ward 2026.12").put("since", 1L));
        try (Connection c = waiting.getConnection()) {
            assertFalse(FleetMember.ready(c, kr, Ledger.verify(c, kr), "ward_fleet", v4));
        }
        SQLiteDataSource open = vectorDatabase(dir, g, kr, forms -> forms.removeAll().addObject().put("name", v4).put("release", "ward 2026.12").put("since", 1L)
                .put("opened", 2L));
        try (Connection c = open.getConnection()) {
            c.createStatement().executeUpdate("UPDATE ward_fleet SET exited = 0, host = 'planted'"); // live rows failing their MACs: no matter
            assertTrue(FleetMember.ready(c, kr, Ledger.verify(c, kr), "ward_fleet", v4));
        }
    }
}
