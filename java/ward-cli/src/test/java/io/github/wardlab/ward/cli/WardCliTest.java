package io.github.wardlab.ward.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every flag of ward-java and its effect, the exit codes, and the refusals. */
class WardCliTest {
    record Run(int code, byte[] out, String err) {
        String text() {
            return new String(out, StandardCharsets.UTF_8);
        }
    }

    @TempDir
    Path dir;
    Path keyring, masterKey;
    String masterKeyText;
    JsonNode vectors;

    /** The Go library's v4 vector keyring and its master key, as files. */
    @BeforeEach
    void files() throws Exception {
        ObjectMapper json = new ObjectMapper();
        vectors = json.readTree(Path.of("..", "..", "keyring", "testdata", "v4-vectors.json").toFile());
        keyring = Files.write(dir.resolve("kr.json"), json.writeValueAsBytes(vectors.get("keyring")));
        masterKeyText = vectors.get("master_key").asText();
        masterKey = Files.writeString(dir.resolve("mk.b64"), masterKeyText);
    }

    Run run(byte[] stdin, Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        int code = WardCli.run(args, new ByteArrayInputStream(stdin), out, new PrintStream(err, true, StandardCharsets.UTF_8), env);
        return new Run(code, out.toByteArray(), err.toString(StandardCharsets.UTF_8));
    }

    Run run(byte[] stdin, String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--keyring", keyring.toString(), "--master-key-file", masterKey.toString()));
        return run(stdin, Map.of(), all.toArray(String[]::new));
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void encryptWritesTheTextFormAndBinary() {
        Run text = run(utf8("hello"), "encrypt", "--table", "messages", "--column", "body", "--row", "42");
        assertEquals(0, text.code(), text.err());
        assertTrue(text.text().startsWith("w4:") && text.text().endsWith("\n"), text.text());
        Run bin = run(utf8("hello"), "encrypt", "--table", "messages", "--column", "body", "--row", "42", "--binary");
        assertEquals(0, bin.code(), bin.err());
        assertEquals(4, bin.out()[0]);
        for (byte[] stored : List.of(text.out(), bin.out())) {
            Run open = run(stored, "decrypt", "--table", "messages", "--column", "body", "--row", "42");
            assertEquals(0, open.code(), open.err());
            assertEquals("hello", open.text());
        }
    }

    /** The vectors the Go library sealed for messages.body row 42 open here, and only there. */
    @Test
    void opensTheGoVectors() {
        String scope = HexFormat.of().formatHex("ward/field/v4\0\u0008messages\u0004body".getBytes(StandardCharsets.US_ASCII));
        int opened = 0;
        for (JsonNode v : vectors.get("vectors")) {
            if (!v.get("scope_hex").asText().equals(scope)) {
                continue;
            }
            byte[] ct = HexFormat.of().parseHex(v.get("ciphertext_hex").asText());
            Run r = run(ct, "decrypt", "--table", "messages", "--column", "body", "--row", "42");
            assertEquals(0, r.code(), r.err());
            assertEquals(v.get("plaintext").asText(), r.text());
            Run text = run(utf8(v.get("text").asText() + "\n"), "decrypt", "--table", "messages", "--column", "body", "--row", "42");
            assertEquals(v.get("plaintext").asText(), text.text(), text.err());
            assertEquals(1, run(ct, "decrypt", "--table", "messages", "--column", "body", "--row", "43").code());
            opened++;
        }
        assertEquals(3, opened, "the vectors of messages.body row 42");
    }

    /** --table, --column, --row and each --bind are in the binding: changing any refuses the value. */
    @Test
    void everyBindingFlagBinds() {
        String[] sealed = {"--table", "messages", "--column", "body", "--row", "7", "--bind", "owner=alice", "--bind", "role=user"};
        Run enc = run(utf8("secret text"), concat(new String[] {"encrypt"}, sealed));
        assertEquals(0, enc.code(), enc.err());
        assertEquals(0, run(enc.out(), concat(new String[] {"decrypt"}, sealed)).code());
        for (int i = 1; i < sealed.length; i += 2) {
            String[] other = sealed.clone();
            other[i] = other[i].contains("=") ? other[i] + "x" : other[i] + "2";
            Run r = run(enc.out(), concat(new String[] {"decrypt"}, other));
            assertEquals(1, r.code(), "changed " + sealed[i - 1] + ": " + r.err());
            assertTrue(r.err().contains("WrongContext"), r.err());
            assertFalse(r.err().contains("secret text"), r.err());
        }
        String[] reordered = sealed.clone();
        reordered[7] = "role=user";
        reordered[9] = "owner=alice";
        assertEquals(1, run(enc.out(), concat(new String[] {"decrypt"}, reordered)).code(), "the bind order is the column's");
    }

    /** WARD_KEYRING and WARD_MASTER_KEY stand in for the flags; a flag wins over the variable. */
    @Test
    void keysFromTheEnvironment() {
        Map<String, String> env = new HashMap<>(Map.of("WARD_KEYRING", keyring.toString(), "WARD_MASTER_KEY", masterKeyText));
        Run enc = run(utf8("x"), env, "encrypt", "--table", "t", "--column", "c", "--row", "1");
        assertEquals(0, enc.code(), enc.err());
        env.put("WARD_MASTER_KEY", "");
        Run none = run(enc.out(), env, "decrypt", "--table", "t", "--column", "c", "--row", "1");
        assertEquals(1, none.code());
        assertTrue(none.err().contains("no master key"), none.err());
        Run file = run(enc.out(), env, "decrypt", "--table", "t", "--column", "c", "--row", "1", "--master-key-file", masterKey.toString());
        assertEquals(0, file.code(), file.err());
        env.put("WARD_KEYRING", dir.resolve("missing.json").toString());
        Run flag = run(enc.out(), env, "decrypt", "--table", "t", "--column", "c", "--row", "1", "--master-key-file", masterKey.toString(), "--keyring", keyring.toString());
        assertEquals(0, flag.code(), flag.err());
    }

    @Test
    void usageErrorsExit2() {
        String[][] bad = {
            {},
            {"seal"},
            {"encrypt", "--table", "t", "--column", "c"},
            {"encrypt", "--table", "t", "--column", "c", "--row"},
            {"encrypt", "--table", "t", "--column", "c", "--row", "1", "--bind", "novalue"},
            {"encrypt", "--table", "t", "--column", "c", "--row", "1", "--master-key", masterKeyText},
            {"encrypt", "--table", "t", "--column", "c", "--row", "1", "--binary=yes"},
            {"decrypt", "--table", "t", "--column", "c", "--row", "1", "--binary"},
        };
        for (String[] args : bad) {
            Run r = run(utf8("x"), Map.of("WARD_KEYRING", keyring.toString(), "WARD_MASTER_KEY", masterKeyText), args);
            assertEquals(2, r.code(), Arrays.toString(args) + ": " + r.err());
            assertFalse(r.err().contains(masterKeyText), "a key in an error");
        }
        Run noKeyring = run(utf8("x"), Map.of(), "encrypt", "--table", "t", "--column", "c", "--row", "1");
        assertEquals(2, noKeyring.code());
        Run nul = run(utf8("x"), Map.of("WARD_MASTER_KEY", masterKeyText), "encrypt", "--table", "t", "--column", "c", "--row", "1", "--keyring", "kr\0.json");
        assertEquals(2, nul.code(), nul.err());
    }

    /** A damaged value, another keyring's value and a value too large are refused, typed. */
    @Test
    void refusals() throws Exception {
        Run enc = run(utf8("x"), "encrypt", "--table", "t", "--column", "c", "--row", "1", "--binary");
        byte[] damaged = enc.out().clone();
        damaged[damaged.length - 1] ^= 1;
        Run r = run(damaged, "decrypt", "--table", "t", "--column", "c", "--row", "1");
        assertEquals(1, r.code());
        assertTrue(r.err().contains("Authentication"), r.err());
        Run junk = run(utf8("w4:not base64!"), "decrypt", "--table", "t", "--column", "c", "--row", "1");
        assertEquals(1, junk.code());
        assertTrue(junk.err().contains("Malformed"), junk.err());
        InputStream huge = new InputStream() {
            long left = WardCli.MAX_INPUT + 1L;

            @Override
            public int read() {
                return left-- > 0 ? 'a' : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (left <= 0) {
                    return -1;
                }
                int n = (int) Math.min(len, left);
                Arrays.fill(b, off, off + n, (byte) 'a');
                left -= n;
                return n;
            }
        };
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = WardCli.run(new String[] {"encrypt", "--table", "t", "--column", "c", "--row", "1", "--keyring", keyring.toString(), "--master-key-file", masterKey.toString()},
            huge, new ByteArrayOutputStream(), new PrintStream(err, true, StandardCharsets.UTF_8), Map.of());
        assertEquals(2, code, err.toString(StandardCharsets.UTF_8));
    }

    static String[] concat(String[] a, String[] b) {
        String[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** --kms names the keyring's wrapper: local://PATH as the master key file, WARD_KMS as its default, awskms:// through AWS KMS. */
    @Test
    void kmsNamesTheWrapper() throws Exception {
        Run sealed = run(utf8("kms"), "encrypt", "--table", "t", "--column", "c", "--row", "1");
        String[] open = {"decrypt", "--table", "t", "--column", "c", "--row", "1", "--keyring", keyring.toString()};
        Run local = run(sealed.out(), Map.of(), concat(open, "--kms", "local://" + masterKey));
        assertEquals(0, local.code(), local.err());
        assertEquals("kms", local.text());
        Run env = run(sealed.out(), Map.of("WARD_KMS", "local://" + masterKey), open);
        assertEquals(0, env.code(), env.err());
        Run envKey = run(sealed.out(), Map.of("WARD_KMS", "local://", "WARD_MASTER_KEY", masterKeyText), open);
        assertEquals(0, envKey.code(), envKey.err());
        // The flag beats WARD_KMS: a master key file given, WARD_KMS's wrapper is not asked.
        Run flagWins = run(sealed.out(), Map.of("WARD_KMS", "awskms://alias/unused"), concat(open, "--master-key-file", masterKey.toString()));
        assertEquals(0, flagWins.code(), flagWins.err());

        assertEquals(2, run(sealed.out(), Map.of(), concat(open, "--kms", "local://" + masterKey, "--master-key-file", masterKey.toString())).code());
        assertEquals(2, run(sealed.out(), Map.of(), concat(open, "--kms", "ftp://host/key")).code());
        // A keyring under a local key, asked of AWS KMS: the wrapper named in the file is not the one given.
        Run wrong = run(sealed.out(), Map.of(), concat(open, "--kms", "awskms://alias/x?region=us-east-1&endpoint=http://127.0.0.1:9"));
        assertEquals(1, wrong.code());
        assertTrue(wrong.err().contains("WrongWrapper"), wrong.err());
        Run badUrl = run(sealed.out(), Map.of(), concat(open, "--kms", "awskms://?region=x"));
        assertEquals(1, badUrl.code());
        assertTrue(badUrl.err().contains("KeyServiceFailure"), badUrl.err());
    }

    static String[] concat(String[] a, String b, String c) {
        return concat(a, new String[] {b, c});
    }

    static String[] concat(String[] a, String b, String c, String d, String e) {
        return concat(a, new String[] {b, c, d, e});
    }

    /** --grant opens the granted column's values with the reader's key (Go's grant vector), in the keyring's place, and never seals. */
    @Test
    void grantOpensInTheKeyringsPlace() throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonNode v = json.readTree(Path.of("..", "..", "keyring", "testdata", "grant-v1.json").toFile());
        Path kr = Files.write(dir.resolve("owner.json"), json.writeValueAsBytes(v.get("keyring")));
        Path owner = Files.writeString(dir.resolve("owner.b64"), v.get("master_key").asText());
        Path reader = Files.writeString(dir.resolve("reader.b64"), v.get("reader_master_key").asText());
        Path grant = Files.write(dir.resolve("g.grant"), json.writeValueAsBytes(v.get("grant")));
        String[] row = {"--table", "notes", "--column", "title", "--row", "5"};
        Run sealed = run(utf8("granted"), Map.of(), concat(concat(new String[] {"encrypt"}, row), "--keyring", kr.toString(), "--master-key-file", owner.toString()));
        assertEquals(0, sealed.code(), sealed.err());
        // WARD_KEYRING names the owner's keyring: with --grant it is not read.
        Run open = run(sealed.out(), Map.of("WARD_KEYRING", kr.toString()), concat(concat(new String[] {"decrypt"}, row), "--grant", grant.toString(), "--master-key-file", reader.toString()));
        assertEquals(0, open.code(), open.err());
        assertEquals("granted", open.text());
        Run enc = run(utf8("x"), Map.of(), concat(concat(new String[] {"encrypt"}, row), "--grant", grant.toString(), "--master-key-file", reader.toString()));
        assertEquals(2, enc.code());
        Run other = run(sealed.out(), Map.of(), concat(new String[] {"decrypt", "--table", "notes", "--column", "body", "--row", "5"}, "--grant", grant.toString(), "--master-key-file", reader.toString()));
        assertEquals(1, other.code());
        assertTrue(other.err().contains("WrongContext"), other.err());
    }

    /** --envelope seals under the key service alone; decrypt reads an envelope by its form, bound to the row or --context, and --ec. */
    @Test
    void envelopes() {
        String[] mk = {"--master-key-file", masterKey.toString()};
        String[] row = {"--table", "t", "--column", "c", "--row", "1", "--bind", "owner=alice"};
        Run text = run(utf8("env"), Map.of(), concat(concat(new String[] {"encrypt", "--envelope"}, row), mk));
        assertEquals(0, text.code(), text.err());
        assertTrue(text.text().startsWith("e1:") && text.text().endsWith("\n"), text.text());
        Run open = run(text.out(), Map.of(), concat(concat(new String[] {"decrypt"}, row), mk)); // no keyring needed
        assertEquals(0, open.code(), open.err());
        assertEquals("env", open.text());
        Run other = run(text.out(), Map.of(), concat(new String[] {"decrypt", "--table", "t", "--column", "c", "--row", "2", "--bind", "owner=alice"}, mk));
        assertEquals(1, other.code());
        Run bin = run(utf8("env"), Map.of(), concat(concat(new String[] {"encrypt", "--envelope", "--binary"}, row), mk));
        assertEquals(0x81, bin.out()[0] & 0xff);
        assertEquals("env", run(bin.out(), Map.of(), concat(concat(new String[] {"decrypt"}, row), mk)).text());
        String[] raw = {"--context", "ctx", "--ec", "app=chat,t=messages"};
        Run ctx = run(utf8("raw"), Map.of("WARD_MASTER_KEY", masterKeyText), concat(new String[] {"encrypt", "--envelope"}, raw));
        assertEquals(0, ctx.code(), ctx.err());
        assertEquals("raw", run(ctx.out(), Map.of("WARD_MASTER_KEY", masterKeyText), concat(new String[] {"decrypt"}, raw)).text());
        assertEquals(1, run(ctx.out(), Map.of("WARD_MASTER_KEY", masterKeyText), new String[] {"decrypt", "--context", "ctx", "--ec", "app=chat"}).code());
        // Usage errors: each flag where it does not belong.
        Run sealed = run(utf8("kr"), "encrypt", "--table", "t", "--column", "c", "--row", "1");
        for (String[] bad : new String[][] {
                {"decrypt", "--envelope", "--context", "c"}, {"encrypt", "--context", "c"}, {"encrypt", "--envelope", "--context", "c", "--table", "t"},
                {"encrypt", "--envelope", "--context", "c", "--ec", "novalue"}, {"encrypt", "--envelope", "--context", "c", "--ec", "a=1,a=2"},
                {"encrypt", "--table", "t", "--column", "c", "--row", "1", "--ec", "a=b", "--keyring", keyring.toString()},
                {"encrypt", "--envelope=yes", "--context", "c"}}) {
            assertEquals(2, run(utf8("x"), Map.of("WARD_MASTER_KEY", masterKeyText), bad).code(), String.join(" ", bad));
        }
        assertEquals(1, run(sealed.out(), Map.of("WARD_MASTER_KEY", masterKeyText),
                new String[] {"decrypt", "--context", "c", "--keyring", keyring.toString()}).code()); // a row's value does not open under a raw context
        // A keyring value bound to a raw context (the Go CLI's --context): v3, opening under that context only.
        String[] kr = {"--keyring", keyring.toString()};
        Run raw3 = run(utf8("bound"), Map.of("WARD_MASTER_KEY", masterKeyText), concat(new String[] {"encrypt", "--context", "ctx"}, kr));
        assertTrue(raw3.text().startsWith("w3:"), raw3.text());
        assertEquals("bound", run(raw3.out(), Map.of("WARD_MASTER_KEY", masterKeyText), concat(new String[] {"decrypt", "--context", "ctx"}, kr)).text());
        assertEquals(1, run(raw3.out(), Map.of("WARD_MASTER_KEY", masterKeyText), concat(new String[] {"decrypt", "--context", "other"}, kr)).code());
        assertEquals(2, run(utf8("x"), Map.of("WARD_MASTER_KEY", masterKeyText), concat(new String[] {"encrypt", "--context", "ctx", "--db", "sqlite:x"}, kr)).code());
    }
}
