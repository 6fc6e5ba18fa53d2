package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Envelope ciphertext v1: the Go CLI's vector, both ways with the Go CLI, and the refusals. */
class EnvelopeTest {
    static final Column BODY = new Column((Keyring) null, "messages", "body");

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * kms/testdata/e1-cli, written by an early release's CLI: the field
     * context of that release (v1, as Go's TestEnvelopeTextGolden passes it).
     */
    @Test
    void theGoCliVectorOpens() throws Exception {
        MasterKey mk = MasterKey.load(Vectors.repo("kms/testdata/e1-cli/mk"));
        byte[] ct = Files.readAllBytes(Vectors.repo("kms/testdata/e1-cli/ct.txt"));
        assertTrue(Envelope.isEnvelope(ct));
        byte[] v1 = "ward/field/v1\0\u0008messages\u0004body42".getBytes(StandardCharsets.US_ASCII);
        assertEquals("hello from v1", new String(Envelope.open(mk, ct, v1, Map.of()), StandardCharsets.UTF_8));
        assertThrows(WardException.Authentication.class, () -> Envelope.open(mk, ct, BODY.contextV3(42L), Map.of()));
    }

    @Test
    void roundTripsAndRefusals() {
        byte[] raw = new byte[32];
        new java.security.SecureRandom().nextBytes(raw);
        MasterKey mk = MasterKey.parse(java.util.Base64.getEncoder().encodeToString(raw));
        Map<String, String> ec = Map.of("app", "chat", "table", "messages");
        byte[] env = Envelope.seal(mk, utf8("hi"), utf8("ctx"), ec);
        assertEquals(Envelope.VERSION, env[0] & 0xff);
        assertArrayEquals(utf8("hi"), Envelope.open(mk, env, utf8("ctx"), ec));
        assertArrayEquals(utf8("hi"), Envelope.open(mk, utf8(Envelope.toText(env) + "\n"), utf8("ctx"), ec));
        assertThrows(WardException.Authentication.class, () -> Envelope.open(mk, env, utf8("other"), ec));
        assertThrows(WardException.Authentication.class, () -> Envelope.open(mk, env, utf8("ctx"), Map.of("app", "chat")));
        byte[] damaged = env.clone();
        damaged[damaged.length - 1] ^= 1;
        assertThrows(WardException.Authentication.class, () -> Envelope.open(mk, damaged, utf8("ctx"), ec));
        assertThrows(WardException.Malformed.class, () -> Envelope.open(mk, java.util.Arrays.copyOf(env, 40), utf8("ctx"), ec));
        assertThrows(WardException.Malformed.class, () -> Envelope.open(mk, new byte[] {(byte) 0x81, 0x04, 0x01, 0}, utf8("ctx"), ec)); // 1025 bytes
        assertThrows(WardException.UnsupportedVersion.class, () -> Envelope.open(mk, new byte[] {0x04, 0, 1, 0}, utf8("ctx"), ec));
        assertThrows(WardException.Malformed.class, () -> Envelope.open(mk, utf8("e1:!!"), utf8("ctx"), ec));
        assertFalse(Envelope.isEnvelope(utf8("w4:abc")));
        Random rnd = new Random(5);
        for (int i = 0; i < 2000; i++) { // a WardException or a value, never another exception
            byte[] m = ParserRandomTest.mutate(rnd, env);
            try {
                Envelope.open(mk, m, utf8("ctx"), ec);
            } catch (WardException e) {
                // refused
            }
        }
    }

    static String go(byte[] stdin, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(System.getenv("WARD_GO_CLI")));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        p.getOutputStream().write(stdin);
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), String.join(" ", args));
        return out;
    }

    /** The Go CLI seals, Java opens; Java seals, the Go CLI opens: bound to a row, or to a raw context and encryption context. */
    @Test
    void bothWaysWithTheGoCli(@TempDir Path dir) throws Exception {
        Vectors.requireGoCli();
        Path mkFile = dir.resolve("mk.b64");
        go(new byte[0], "keyring", "gen-master-key", "--out", mkFile.toString());
        MasterKey mk = MasterKey.load(mkFile);
        Column owned = new Column((Keyring) null, "messages", "body", "owner");
        String goRow = go(utf8("from go"), "encrypt", "--envelope", "--master-key-file", mkFile.toString(),
                "--table", "messages", "--column", "body", "--row", "42", "--bind", "owner=alice");
        assertEquals("from go", new String(Envelope.open(mk, utf8(goRow), owned.contextV3(42L, "alice"), Map.of()), StandardCharsets.UTF_8));
        assertThrows(WardException.Authentication.class, () -> Envelope.open(mk, utf8(goRow), owned.contextV3(42L, "bob"), Map.of()));
        String goRaw = go(utf8("raw"), "encrypt", "--envelope", "--master-key-file", mkFile.toString(), "--context", "c", "--ec", "app=x,t=y");
        assertEquals("raw", new String(Envelope.open(mk, utf8(goRaw), utf8("c"), Map.of("app", "x", "t", "y")), StandardCharsets.UTF_8));
        String javaRow = Envelope.toText(Envelope.seal(mk, utf8("from java"), owned.contextV3(7L, "alice"), Map.of()));
        assertEquals("from java", go(utf8(javaRow), "decrypt", "--master-key-file", mkFile.toString(),
                "--table", "messages", "--column", "body", "--row", "7", "--bind", "owner=alice"));
        String javaRaw = Envelope.toText(Envelope.seal(mk, utf8("raw java"), utf8("c"), Map.of("app", "x")));
        assertEquals("raw java", go(utf8(javaRaw), "decrypt", "--master-key-file", mkFile.toString(), "--context", "c", "--ec", "app=x"));
    }
}
