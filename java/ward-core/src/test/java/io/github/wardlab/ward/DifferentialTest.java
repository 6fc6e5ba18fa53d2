package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Against the Go CLI ({@code WARD_GO_CLI}, which CI builds), both ways: a
 * value the Go CLI seals for a random row and bound values opens here, and
 * is refused at another row; a value sealed here opens with the Go CLI, and
 * is refused by it at another row.
 */
class DifferentialTest {
    static final int CASES = 25;

    static Path goCli() {
        String cli = System.getenv("WARD_GO_CLI");
        if (cli == null || cli.isEmpty()) {
            if (System.getenv("WARD_CI") != null) {
                fail("WARD_GO_CLI is not set in CI");
            }
            Assumptions.abort("WARD_GO_CLI (the Go ward binary) is not set");
        }
        return Path.of(cli);
    }

    record Run(int code, byte[] out, String err) {}

    static Run go(Path dir, byte[] stdin, List<String> args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(goCli().toString());
        cmd.addAll(args);
        Path in = Files.write(Files.createTempFile(dir, "in", ""), stdin);
        Process p = new ProcessBuilder(cmd).redirectInput(in.toFile()).start();
        byte[] out = p.getInputStream().readAllBytes();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("the Go CLI hung: " + args);
        }
        return new Run(p.exitValue(), out, err);
    }

    static byte[] ok(Run r) {
        assertEquals(0, r.code(), r.err());
        return r.out();
    }

    /** A random case: the row, and 0–3 bound columns with their string values. */
    record Case(String table, String column, String row, String[] names, String[] values, byte[] value) {
        List<String> flags() {
            List<String> f = new ArrayList<>(List.of("--table", table, "--column", column, "--row", row));
            for (int i = 0; i < names.length; i++) {
                f.add("--bind");
                f.add(names[i] + "=" + values[i]);
            }
            return f;
        }
    }

    static String pick(Random rnd, String alphabet, int min, int max) {
        StringBuilder sb = new StringBuilder();
        int n = min + rnd.nextInt(max - min + 1);
        for (int i = 0; i < n; i++) {
            sb.append(alphabet.charAt(rnd.nextInt(alphabet.length())));
        }
        return sb.toString();
    }

    static Case randomCase(Random rnd) {
        String[] tables = {"notes", "messages", "t".repeat(1 + rnd.nextInt(40))};
        String[] columns = {"title", "body", "é"};
        String row = rnd.nextBoolean() ? Long.toString(rnd.nextLong() % 1_000_000_000_000L) : pick(rnd, "abc-_01é", 1, 20);
        int n = rnd.nextInt(4);
        String[] names = new String[n], values = new String[n];
        for (int i = 0; i < n; i++) {
            names[i] = "c" + i;
            values[i] = pick(rnd, "xyz 0123=", 0, 12);
        }
        int[] sizes = {0, 1, 64, 500, 4096};
        byte[] value = new byte[sizes[rnd.nextInt(sizes.length)]];
        rnd.nextBytes(value);
        return new Case(tables[rnd.nextInt(3)], columns[rnd.nextInt(3)], row, names, values, value);
    }

    @ParameterizedTest
    @ValueSource(strings = {"AES-256-GCM", "AES-128-GCM", "XChaCha20-Poly1305"})
    void bothWays(String alg, @TempDir Path dir) throws Exception {
        Path mk = dir.resolve("mk.b64"), kr = dir.resolve("kr.json");
        ok(go(dir, new byte[0], List.of("keyring", "gen-master-key", "--out", mk.toString())));
        ok(go(dir, new byte[0], List.of("keyring", "new", "--keyring", kr.toString(), "--master-key-file", mk.toString(), "--alg", alg)));
        List<String> keys = List.of("--keyring", kr.toString(), "--master-key-file", mk.toString());
        Keyring keyring = Keyring.load(kr, MasterKey.load(mk));
        assertEquals(alg, keyring.primary().alg().wardName());
        Random rnd = new Random(alg.hashCode());
        for (int i = 0; i < CASES; i++) {
            Case c = randomCase(rnd);
            Column col = new Column(keyring, c.table(), c.column(), c.names());
            Object[] values = c.values();
            List<String> args = new ArrayList<>(List.of("encrypt"));
            args.addAll(keys);
            args.addAll(c.flags());
            args.add("--binary");
            byte[] ct = ok(go(dir, c.value(), args));
            assertEquals(4, ct[0]);
            assertArrayEquals(c.value(), col.open(ct, c.row(), values));
            assertThrows(WardException.WrongContext.class, () -> col.open(ct, c.row() + "x", values));

            // Every other value under a ledger whose fleet has not opened v4: ciphertext v3, which the Go CLI opens too.
            Column writer = i % 2 == 0 ? col : col.checkedBy(new LedgerState("db-0000000000000001", 1, 1, java.util.Set.of()));
            byte[] mine = writer.seal(c.value(), c.row(), values);
            assertEquals(i % 2 == 0 ? 4 : 3, mine[0]);
            List<String> dec = new ArrayList<>(List.of("decrypt"));
            dec.addAll(keys);
            dec.addAll(c.flags());
            assertArrayEquals(c.value(), ok(go(dir, mine, dec)));
            List<String> wrong = new ArrayList<>(dec);
            wrong.set(wrong.indexOf("--row") + 1, c.row() + "x");
            assertNotEquals(0, go(dir, mine, wrong).code());
        }
    }
}
