package io.github.wardlab.ward.password;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Against the Go CLI ({@code WARD_GO_CLI}): each preset the Go CLI writes
 * verifies here; what this package writes
 * verifies with {@code ward password verify}, and a wrong password does
 * not.
 */
class PasswordDifferentialTest {
    record Run(int code, String out, String err) {}

    static Run go(Path dir, String stdin, String... args) throws Exception {
        String cli = System.getenv("WARD_GO_CLI");
        if (cli == null || cli.isEmpty()) {
            if (System.getenv("WARD_CI") != null) {
                fail("WARD_GO_CLI is not set in CI");
            }
            Assumptions.abort("WARD_GO_CLI (the Go ward binary) is not set");
        }
        List<String> cmd = new ArrayList<>(List.of(cli));
        cmd.addAll(List.of(args));
        Path in = Files.writeString(Files.createTempFile(dir, "in", ""), stdin);
        Process p = new ProcessBuilder(cmd).redirectInput(in.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("the Go CLI hung");
        }
        return new Run(p.exitValue(), out, err);
    }

    @Test
    void bothWays(@TempDir Path dir) throws Exception {
        Path mk = dir.resolve("mk.b64"), kr = dir.resolve("kr.json");
        assertEquals(0, go(dir, "", "keyring", "gen-master-key", "--out", mk.toString()).code());
        assertEquals(0, go(dir, "", "keyring", "new", "--keyring", kr.toString(), "--master-key-file", mk.toString()).code());
        assertTrue(Keyring.load(kr, MasterKey.load(mk)).id().startsWith("kr-"));
        Hasher plain = new Hasher(Policy.defaults());
        for (String preset : List.of("owasp", "spring-v5.8", "bcrypt12", "scrypt17", "pbkdf2-sha256")) {
            Run r = go(dir, "correct horse\n", "password", "hash", "--preset", preset, "--allow-weak");
            assertEquals(0, r.code(), r.err());
            assertTrue(plain.verify("correct horse", r.out()).matched(), preset + ": " + r.out());
            assertFalse(plain.verify("correct horsf", r.out()).matched(), preset);
        }
        // The CLI verifies without a pepper (peppered hashes: PasswordTest.pepperGolden).
        for (Hasher h : List.of(plain, new Hasher(Policy.defaults().withPreferred(Params.strong(), false)))) {
            Path hash = Files.writeString(dir.resolve("hash.txt"), h.hash("correct horse") + "\n");
            String[] keys = {"--keyring", kr.toString(), "--master-key-file", mk.toString()};
            Run ok = go(dir, "correct horse\n", concat(new String[] {"password", "verify", "--hash-file", hash.toString()}, keys));
            assertEquals(0, ok.code(), ok.out() + ok.err());
            Run wrong = go(dir, "correct horsf\n", concat(new String[] {"password", "verify", "--hash-file", hash.toString()}, keys));
            assertEquals(1, wrong.code(), wrong.out() + wrong.err());
        }
    }

    static String[] concat(String[] a, String[] b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
