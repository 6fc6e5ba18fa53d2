package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The keyring's own vectors of ciphertext v3 and v4, under AES-128-GCM,
 * AES-256-GCM and XChaCha20-Poly1305: opened, their scoped keys derived the
 * same, their text forms the same, damaged ones told from misplaced ones.
 */
class KeyringVectorsTest {
    @Test
    void v4() throws Exception {
        JsonNode file = Vectors.read("keyring/testdata/v4-vectors.json");
        Keyring kr = Vectors.keyring(file);
        Set<String> algs = new HashSet<>();
        for (JsonNode v : file.get("vectors")) {
            byte[] ct = Vectors.hex(v.get("ciphertext_hex").asText());
            byte[] scope = Vectors.hex(v.get("scope_hex").asText());
            byte[] context = Vectors.hex(v.get("context_hex").asText());
            Keyring.Key key = kr.key(Long.parseLong(v.get("key_id").asText(), 16));
            assertEquals(v.get("alg").asText(), key.alg().wardName());
            assertEquals(v.get("scoped_key_hex").asText(), HexFormat.of().formatHex(kr.scoped(key, scope)));
            assertEquals(v.get("plaintext").asText(), new String(kr.open(ct, context, scope), StandardCharsets.UTF_8));
            assertEquals(v.get("text").asText(), Ciphertext.toText(ct));
            assertArrayEquals(ct, Ciphertext.fromText(v.get("text").asText()));
            misplacedAndDamaged(kr, ct, context, scope);
            algs.add(v.get("alg").asText());
        }
        assertEquals(Set.of("AES-128-GCM", "AES-256-GCM", "XChaCha20-Poly1305"), algs);
    }

    @Test
    void v3() throws Exception {
        JsonNode file = Vectors.read("keyring/testdata/v3-vectors.json");
        Keyring kr = Vectors.keyring(file);
        Set<String> algs = new HashSet<>();
        for (JsonNode v : file.get("vectors")) {
            byte[] ct = Vectors.hex(v.get("ciphertext_hex").asText());
            byte[] context = v.get("context").asText().getBytes(StandardCharsets.UTF_8);
            assertEquals(v.get("plaintext").asText(), new String(kr.open(ct, context, new byte[0]), StandardCharsets.UTF_8));
            assertEquals(v.get("text").asText(), Ciphertext.toText(ct));
            misplacedAndDamaged(kr, ct, context, new byte[0]);
            algs.add(v.get("alg").asText());
        }
        assertEquals(Set.of("AES-128-GCM", "AES-256-GCM", "XChaCha20-Poly1305"), algs);
    }

    /** Another context is another row's; a damaged tag under its own context is damage. */
    static void misplacedAndDamaged(Keyring kr, byte[] ct, byte[] context, byte[] scope) {
        byte[] other = Wire.concat(context, new byte[] {'x'});
        assertThrows(WardException.WrongContext.class, () -> kr.open(ct, other, scope));
        byte[] bad = ct.clone();
        bad[bad.length - 1] ^= 1;
        assertThrows(WardException.Authentication.class, () -> kr.open(bad, context, scope));
    }

    @Test
    void sealsUnderEachAlgorithm() throws Exception {
        Keyring kr = Vectors.keyring(Vectors.read("keyring/testdata/v4-vectors.json"));
        for (Keyring.Key k : kr.keys().values()) {
            byte[] scope = Column.scope("t", "c");
            byte[] ct = Ciphertext.sealV4(k.alg(), Ciphertext.CLASS_KEYRING, k.id(), kr.scoped(k, scope), kr.checkKey(k, scope), "hi".getBytes(StandardCharsets.UTF_8), new byte[] {1});
            assertEquals("hi", new String(kr.open(ct, new byte[] {1}, scope), StandardCharsets.UTF_8));
            misplacedAndDamaged(kr, ct, new byte[] {1}, scope);
        }
    }
}
