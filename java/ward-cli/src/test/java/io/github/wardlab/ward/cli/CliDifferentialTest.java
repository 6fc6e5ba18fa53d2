package io.github.wardlab.ward.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The three command lines against each other over random values (empty,
 * 1 byte, 500 B, 1 MiB, never valid UTF-8 by design), rows and bound
 * values: what ward-java seals, the Go CLI ({@code WARD_GO_CLI}) and the
 * Python package's ({@code WARD_PY_CLI}, {@code ward-py}) open, and the
 * other way round, in both forms; each refuses the value at another row.
 * CI sets both variables; elsewhere a missing one skips its half.
 */
class CliDifferentialTest {
    static final int CASES = 12;

    record Run(int code, byte[] out, String err) {}

    interface Cli {
        Run run(Path dir, byte[] stdin, List<String> args) throws IOException, InterruptedException;
    }

    static Cli external(String variable) {
        String path = System.getenv(variable);
        if (path == null || path.isEmpty()) {
            if (System.getenv("WARD_CI") != null) {
                fail(variable + " is not set in CI");
            }
            return null;
        }
        return (dir, stdin, args) -> {
            List<String> cmd = new ArrayList<>(List.of(path));
            cmd.addAll(args);
            Path in = Files.write(Files.createTempFile(dir, "in", ""), stdin);
            Process p = new ProcessBuilder(cmd).redirectInput(in.toFile()).start();
            byte[] out = p.getInputStream().readAllBytes();
            String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail(variable + " hung: " + args);
            }
            return new Run(p.exitValue(), out, err);
        };
    }

    static final Cli JAVA = (dir, stdin, args) -> {
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        int code = WardCli.run(args.toArray(String[]::new), new ByteArrayInputStream(stdin), out, new PrintStream(err, true, StandardCharsets.UTF_8), Map.of());
        return new Run(code, out.toByteArray(), err.toString(StandardCharsets.UTF_8));
    };

    static byte[] ok(Run r) {
        assertEquals(0, r.code(), r.err());
        return r.out();
    }

    static List<String> caseFlags(Random rnd) {
        String[] tables = {"notes", "messages", "t".repeat(1 + rnd.nextInt(40))};
        String[] columns = {"title", "body", "é"};
        String row = rnd.nextBoolean() ? Long.toString(rnd.nextLong() % 1_000_000_000_000L) : "user-" + rnd.nextInt(1000) + "-é";
        List<String> f = new ArrayList<>(List.of("--table", tables[rnd.nextInt(3)], "--column", columns[rnd.nextInt(3)], "--row", row));
        for (int i = rnd.nextInt(4); i > 0; i--) {
            f.add("--bind");
            f.add("c" + i + "=" + (rnd.nextBoolean() ? "" : "v=" + rnd.nextInt()));
        }
        return f;
    }

    static byte[] value(Random rnd, int i) {
        int[] sizes = {0, 1, 500, 1 << 20};
        byte[] v = new byte[sizes[i % sizes.length]];
        rnd.nextBytes(v);
        if (v.length > 0) {
            v[0] = (byte) 0xff; // never UTF-8
        }
        return v;
    }

    @ParameterizedTest
    @ValueSource(strings = {"AES-256-GCM", "XChaCha20-Poly1305"})
    void allWays(String alg, @TempDir Path dir) throws Exception {
        Cli go = external("WARD_GO_CLI"), py = external("WARD_PY_CLI");
        Assumptions.assumeTrue(go != null, "WARD_GO_CLI (the Go ward binary) is not set");
        Path mk = dir.resolve("mk.b64"), kr = dir.resolve("kr.json");
        ok(go.run(dir, new byte[0], List.of("keyring", "gen-master-key", "--out", mk.toString())));
        ok(go.run(dir, new byte[0], List.of("keyring", "new", "--keyring", kr.toString(), "--master-key-file", mk.toString(), "--alg", alg)));
        List<String> keys = List.of("--keyring", kr.toString(), "--master-key-file", mk.toString());
        List<Cli> others = py == null ? List.of(go) : List.of(go, py);
        Random rnd = new Random(alg.hashCode());
        for (int i = 0; i < CASES; i++) {
            List<String> flags = caseFlags(rnd);
            byte[] v = value(rnd, i);
            boolean binary = i % 2 == 0;
            for (Cli other : others) {
                check(dir, JAVA, other, keys, flags, v, binary);
                check(dir, other, JAVA, keys, flags, v, binary);
            }
        }
    }

    /** from seals v; to opens it with the same flags and refuses it at another row. */
    static void check(Path dir, Cli from, Cli to, List<String> keys, List<String> flags, byte[] v, boolean binary) throws Exception {
        List<String> enc = new ArrayList<>(List.of("encrypt"));
        enc.addAll(keys);
        enc.addAll(flags);
        if (binary) {
            enc.add("--binary");
        }
        byte[] ct = ok(from.run(dir, v, enc));
        List<String> dec = new ArrayList<>(List.of("decrypt"));
        dec.addAll(keys);
        dec.addAll(flags);
        assertArrayEquals(v, ok(to.run(dir, ct, dec)), flags.toString());
        dec.set(dec.indexOf("--row") + 1, flags.get(flags.indexOf("--row") + 1) + "0");
        assertNotEquals(0, to.run(dir, ct, dec).code(), "opened at another row: " + flags);
    }

    /**
     * A grant the Go CLI makes (ward grant, recorded in a SQLite database's
     * ledger) opens in ward-java with --grant and the reader's key: the
     * granted column's values, Go's and ward-java's; another column is
     * refused, as is sealing with a grant, and what the keyring seals
     * under a key added after the grant (a grant holder, registered
     * nowhere, opens only what existed when it was made).
     */
    @org.junit.jupiter.api.Test
    void goGrantsOpenInJava(@TempDir Path dir) throws Exception {
        Cli go = external("WARD_GO_CLI");
        Assumptions.assumeTrue(go != null, "WARD_GO_CLI (the Go ward binary) is not set");
        Path mk = dir.resolve("mk.b64"), reader = dir.resolve("reader.b64"), kr = dir.resolve("kr.json"), g = dir.resolve("notes.grant");
        ok(go.run(dir, new byte[0], List.of("keyring", "gen-master-key", "--out", mk.toString())));
        ok(go.run(dir, new byte[0], List.of("keyring", "gen-master-key", "--out", reader.toString())));
        List<String> keys = List.of("--keyring", kr.toString(), "--master-key-file", mk.toString());
        ok(go.run(dir, new byte[0], concat(List.of("keyring", "new"), keys)));
        Files.createFile(dir.resolve("app.db")); // an empty SQLite database: its ledger records the grant
        ok(go.run(dir, new byte[0], concat(List.of("grant"), keys, List.of("--db", "sqlite:" + dir.resolve("app.db"),
                "--scope", "notes.title", "--to", "local://" + reader, "--out", g.toString()))));
        List<String> row = List.of("--table", "notes", "--column", "title", "--row", "9", "--bind", "owner=alice");
        List<String> byGrant = List.of("--grant", g.toString(), "--master-key-file", reader.toString());
        for (Cli sealer : List.of(go, JAVA)) {
            byte[] ct = ok(sealer.run(dir, "granted".getBytes(StandardCharsets.UTF_8), concat(List.of("encrypt"), keys, row)));
            assertEquals("granted", new String(ok(JAVA.run(dir, ct, concat(List.of("decrypt"), byGrant, row))), StandardCharsets.UTF_8));
        }
        byte[] body = ok(go.run(dir, "not granted".getBytes(StandardCharsets.UTF_8),
                concat(List.of("encrypt"), keys, List.of("--table", "notes", "--column", "body", "--row", "9"))));
        Run refused = JAVA.run(dir, body, concat(List.of("decrypt"), byGrant, List.of("--table", "notes", "--column", "body", "--row", "9")));
        assertEquals(1, refused.code());
        org.junit.jupiter.api.Assertions.assertTrue(refused.err().contains("WrongContext"), refused.err());
        assertEquals(2, JAVA.run(dir, new byte[1], concat(List.of("encrypt"), byGrant, row)).code());
        // A key the keyring gains after the grant: what it seals, the grant does not open.
        ok(go.run(dir, new byte[0], concat(List.of("keyring", "rotate"), keys, List.of("--db", "sqlite:" + dir.resolve("app.db"), "--no-reseal"))));
        byte[] later = ok(go.run(dir, "after the grant".getBytes(StandardCharsets.UTF_8), concat(List.of("encrypt"), keys, row)));
        Run unknown = JAVA.run(dir, later, concat(List.of("decrypt"), byGrant, row));
        assertEquals(1, unknown.code());
        org.junit.jupiter.api.Assertions.assertTrue(unknown.err().contains("UnknownKey"), unknown.err());
        // The grant under the keyring's own master key: not the reader's wrapper.
        Run wrong = JAVA.run(dir, body, concat(List.of("decrypt", "--grant", g.toString(), "--master-key-file", mk.toString()), row));
        assertEquals(1, wrong.code());
        org.junit.jupiter.api.Assertions.assertTrue(wrong.err().contains("WrongWrapper"), wrong.err());
    }

    /**
     * encrypt --db as the Go CLI's: ciphertext v4 while every process
     * registered in the database reads it (here none is), v3 once a live
     * registration does not say so (a row that fails its MAC), said on
     * stderr; the Go CLI writes the same version in each state and opens
     * what ward-java wrote. --db is refused for decrypt and for a path with
     * no database.
     */
    @org.junit.jupiter.api.Test
    void encryptDbWritesWhatTheFleetReads(@TempDir Path dir) throws Exception {
        Cli go = external("WARD_GO_CLI");
        Assumptions.assumeTrue(go != null, "WARD_GO_CLI (the Go ward binary) is not set");
        Path mk = dir.resolve("mk.b64"), kr = dir.resolve("kr.json"), db = Files.createFile(dir.resolve("app.db"));
        ok(go.run(dir, new byte[0], List.of("keyring", "gen-master-key", "--out", mk.toString())));
        List<String> keys = List.of("--keyring", kr.toString(), "--master-key-file", mk.toString());
        ok(go.run(dir, new byte[0], concat(List.of("keyring", "new"), keys)));
        ok(go.run(dir, new byte[0], concat(List.of("keyring", "add", "--promote"), keys, List.of("--db", "sqlite:" + db))));
        List<String> row = List.of("--table", "notes", "--column", "title", "--row", "3", "--db", "sqlite:" + db);
        for (String version : List.of("w4:", "w3:")) {
            if (version.equals("w3:")) { // a live registration that fails its MAC: it may read v3 only
                io.github.wardlab.ward.FleetMember.join(sqlite(db), io.github.wardlab.ward.Keyring.load(kr, io.github.wardlab.ward.MasterKey.load(mk)),
                        List.of(), null).close();
                try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + db)) {
                    c.createStatement().executeUpdate("UPDATE ward_fleet SET exited = 0, host = 'planted'");
                }
            }
            for (Cli sealer : List.of(go, JAVA)) {
                Run sealed = sealer.run(dir, "for the fleet".getBytes(StandardCharsets.UTF_8), concat(List.of("encrypt"), keys, row));
                String text = new String(ok(sealed), StandardCharsets.US_ASCII);
                org.junit.jupiter.api.Assertions.assertTrue(text.startsWith(version), text);
                org.junit.jupiter.api.Assertions.assertEquals(version.equals("w3:"), sealed.err().contains("v3"), sealed.err());
                assertEquals("for the fleet", new String(ok(go.run(dir, sealed.out(), concat(List.of("decrypt"), keys, row.subList(0, 6)))), StandardCharsets.UTF_8));
            }
        }
        assertEquals(2, JAVA.run(dir, new byte[1], concat(List.of("decrypt"), keys, row)).code());
        assertEquals(2, JAVA.run(dir, new byte[1], concat(List.of("encrypt"), keys, List.of("--table", "t", "--column", "c", "--row", "1", "--db",
                "sqlite:" + dir.resolve("none.db")))).code());
        assertEquals(2, JAVA.run(dir, new byte[1], concat(List.of("encrypt"), keys, List.of("--table", "t", "--column", "c", "--row", "1", "--db",
                "ftp://host/db"))).code());
        org.junit.jupiter.api.Assertions.assertFalse(Files.exists(dir.resolve("none.db")));
    }

    /** A keyring value bound to a raw --context: the Go CLI's opens in ward-java and ward-java's in the Go CLI; another context does not. */
    @org.junit.jupiter.api.Test
    void rawContextsBothWays(@TempDir Path dir) throws Exception {
        Cli go = external("WARD_GO_CLI");
        Assumptions.assumeTrue(go != null, "WARD_GO_CLI (the Go ward binary) is not set");
        Path mk = dir.resolve("mk.b64"), kr = dir.resolve("kr.json");
        ok(go.run(dir, new byte[0], List.of("keyring", "gen-master-key", "--out", mk.toString())));
        List<String> keys = List.of("--keyring", kr.toString(), "--master-key-file", mk.toString());
        ok(go.run(dir, new byte[0], concat(List.of("keyring", "new"), keys)));
        for (Cli[] pair : new Cli[][] {{go, JAVA}, {JAVA, go}}) {
            byte[] ct = ok(pair[0].run(dir, "raw context é".getBytes(StandardCharsets.UTF_8), concat(List.of("encrypt", "--context", "invoice 7"), keys)));
            assertEquals("raw context é", new String(ok(pair[1].run(dir, ct, concat(List.of("decrypt", "--context", "invoice 7"), keys))), StandardCharsets.UTF_8));
            assertEquals(1, pair[1].run(dir, ct, concat(List.of("decrypt", "--context", "invoice 8"), keys)).code());
        }
    }

    static javax.sql.DataSource sqlite(Path db) {
        org.sqlite.SQLiteDataSource ds = new org.sqlite.SQLiteDataSource();
        ds.setUrl("jdbc:sqlite:" + db);
        return ds;
    }

    /** Envelopes both ways between the Go CLI and ward-java: bound to a row and an encryption context, or to a raw context. */
    @org.junit.jupiter.api.Test
    void envelopesBothWays(@TempDir Path dir) throws Exception {
        Cli go = external("WARD_GO_CLI");
        Assumptions.assumeTrue(go != null, "WARD_GO_CLI (the Go ward binary) is not set");
        Path mk = dir.resolve("mk.b64");
        ok(go.run(dir, new byte[0], List.of("keyring", "gen-master-key", "--out", mk.toString())));
        List<String> key = List.of("--master-key-file", mk.toString());
        List<List<String>> bindings = List.of(List.of("--table", "messages", "--column", "body", "--row", "42", "--bind", "owner=alice", "--ec", "app=chat"),
                List.of("--context", "raw context", "--ec", "app=chat,tenant=7"));
        Random rnd = new Random(7);
        for (List<String> b : bindings) {
            for (Cli[] way : new Cli[][] {{go, JAVA}, {JAVA, go}}) {
                byte[] v = value(rnd, 2);
                byte[] env = ok(way[0].run(dir, v, concat(List.of("encrypt", "--envelope"), key, b)));
                assertArrayEquals(v, ok(way[1].run(dir, env, concat(List.of("decrypt"), key, b))));
                List<String> other = new ArrayList<>(b);
                other.set(other.size() - 1, other.get(other.size() - 1) + "x"); // another encryption context
                assertEquals(1, way[1].run(dir, env, concat(List.of("decrypt"), key, other)).code());
            }
        }
    }

    @SafeVarargs
    static List<String> concat(List<String>... parts) {
        List<String> out = new ArrayList<>();
        for (List<String> p : parts) {
            out.addAll(p);
        }
        return out;
    }
}
