package io.github.wardlab.ward.password;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every hash of password/testdata (the argon2 CLI, libsodium, htpasswd,
 * python-bcrypt, passlib, hashlib, Spring Security's forms, ward's
 * key-bearing form) verifies here, a wrong password does not, and what the
 * policy refuses is refused before any work.
 */
class PasswordTest {
    static final ObjectMapper JSON = new ObjectMapper();

    static JsonNode read(String relative) throws Exception {
        return JSON.readTree(Path.of("..", "..").resolve(relative).toFile());
    }

    @Test
    void everyVectorVerifies() throws Exception {
        Hasher h = new Hasher(Policy.defaults());
        Set<String> formats = new HashSet<>();
        int n = 0;
        for (JsonNode v : read("password/testdata/vectors.json")) {
            String hash = v.get("hash").asText(), pw = v.get("password").asText();
            Hasher.Result r = h.verify(pw, hash);
            assertTrue(r.matched(), v.get("source").asText());
            assertFalse(h.verify(pw + "!", hash).matched(), v.get("source").asText());
            formats.add(r.format());
            if (hash.startsWith("{scrypt}")) { // stored without the prefix by an application that used the encoder directly
                assertTrue(h.verify(pw, hash.substring("{scrypt}".length())).matched(), hash);
            }
            n++;
        }
        assertEquals(40, n);
        assertTrue(formats.containsAll(Set.of("phc", "bcrypt", "passlib", "django", "django-bcrypt_sha256", "spring-bcrypt", "spring-argon2", "spring-pbkdf2", "spring-scrypt")), formats.toString());
        JsonNode kb = read("password/testdata/key-bearing-v1.json");
        Hasher weak = new Hasher(Policy.defaults());
        assertTrue(weak.verify(kb.get("password").asText(), kb.get("hash").asText()).matched());
        assertFalse(weak.verify("Tr0ub4dor&4", kb.get("hash").asText()).matched());
    }

    @Test
    void hashesAndUpgrades() {
        Hasher h = new Hasher(Policy.defaults());
        String hash = h.hash("correct horse battery staple");
        assertTrue(hash.startsWith("$argon2id$v=19$m=19456,t=2,p=1$"), hash);
        Hasher.Result r = h.verify("correct horse battery staple", hash);
        assertTrue(r.matched());
        assertFalse(r.needsRehash());
        // Spring's v5.8 preset is weaker than OWASP's: written only when allowed, upgraded on log-in.
        assertThrows(PasswordException.WeakParams.class, () -> new Hasher(Policy.defaults().withPreferred(Params.springV58(), false)));
        String spring = new Hasher(Policy.defaults().withPreferred(Params.springV58(), true)).hash("pw");
        assertTrue(h.verify("pw", spring).needsRehash());
        assertTrue(h.needsRehash(spring));
        assertFalse(h.needsRehash(hash));
        assertTrue(new Hasher(Policy.defaults().withPreferred(Params.strong(), false)).needsRehash(hash));
        assertThrows(PasswordException.BadPassword.class, () -> h.hash(""));
        assertThrows(PasswordException.BadPassword.class, () -> h.hash("x".repeat(1025)));
    }

    @Test
    void pepper() throws Exception {
        JsonNode file = read("field/testdata/context-v4.json");
        Keyring kr = Keyring.parse(JSON.writeValueAsBytes(file.get("keyring")), MasterKey.parse(file.get("master_key").asText()));
        Hasher peppered = new Hasher(Policy.defaults().withPepper(kr, true));
        String hash = peppered.hash("pw");
        assertTrue(hash.contains(",keyid="), hash);
        assertTrue(peppered.verify("pw", hash).matched());
        assertThrows(PasswordException.Pepper.class, () -> new Hasher(Policy.defaults()).verify("pw", hash));
        String plain = new Hasher(Policy.defaults()).hash("pw");
        assertThrows(PasswordException.Pepper.class, () -> peppered.verify("pw", plain));
        assertTrue(new Hasher(Policy.defaults().withPepper(kr, false)).verify("pw", plain).needsRehash());
    }

    /** Go's peppered hashes (password/testdata/peppered-v1.json) verify with the same keyring. */
    @Test
    void pepperGolden() throws Exception {
        JsonNode file = read("password/testdata/peppered-v1.json");
        Keyring kr = Keyring.parse(JSON.writeValueAsBytes(file.get("keyring")), MasterKey.parse(file.get("master_key").asText()));
        Hasher h = new Hasher(Policy.defaults().withPepper(kr, true));
        int n = 0;
        for (JsonNode v : file.get("vectors")) {
            String hash = v.get("hash").asText();
            assertTrue(h.verify(v.get("password").asText(), hash).matched(), hash);
            assertFalse(h.verify(v.get("password").asText() + "!", hash).matched(), hash);
            assertThrows(PasswordException.Pepper.class, () -> new Hasher(Policy.defaults()).verify(v.get("password").asText(), hash));
            n++;
        }
        assertEquals(3, n);
    }

    /**
     * A key retired by {@code ward keyring retire} keeps its pepper
     * derivation in the file (keyring/testdata/retained-v1.json): a hash
     * peppered with it, as Go wrote it before the retirement, still
     * verifies, and asks for a rehash; nothing else of the key is there.
     */
    @Test
    void aRetiredKeysKeptPepperStillVerifies() throws Exception {
        JsonNode file = read("keyring/testdata/retained-v1.json");
        Keyring kr = Keyring.parse(JSON.writeValueAsBytes(file.get("keyring")), MasterKey.parse(file.get("master_key").asText()));
        long removed = file.get("removed").asLong();
        byte[] kept = java.util.HexFormat.of().parseHex(file.get("pepper_hex").asText());
        assertArrayEquals(kept, kr.deriveFromKey(removed, Hasher.PEPPER_PURPOSE, 32));
        assertThrows(io.github.wardlab.ward.WardException.UnknownKey.class, () -> kr.deriveFromKey(removed, "another purpose", 32));
        assertThrows(io.github.wardlab.ward.WardException.UnknownKey.class, () -> kr.deriveFromKey(removed, Hasher.PEPPER_PURPOSE, 16));
        // The hash Go's hasher wrote while the key was primary: Argon2id of base64(HMAC-SHA-256(pepper, pw)), keyid= the key.
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
        mac.init(new javax.crypto.spec.SecretKeySpec(kept, "HmacSHA256"));
        byte[] input = java.util.Base64.getEncoder().withoutPadding().encode(mac.doFinal("pw".getBytes(StandardCharsets.UTF_8)));
        Params p = Params.argon2id(64, 1, 1);
        byte[] salt = new byte[16];
        Decoded d = new Decoded(p, "phc", salt, null, null, removed, false, false);
        String hash = Hasher.encode(p, removed, salt, Compute.run(d, input, p.keyLen()));
        Hasher h = new Hasher(Policy.defaults().withPepper(kr, true));
        Hasher.Result r = h.verify("pw", hash);
        assertTrue(r.matched() && r.needsRehash(), hash);
        assertFalse(h.verify("pw!", hash).matched());
    }

    @Test
    void refusesBeforeWork() {
        Hasher h = new Hasher(Policy.defaults());
        String huge = "$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHRzYWx0MTIzNA$+7YTtmitIfItC6SOhzUcrMJzsymN2bFnkm1v5rbA9B0";
        assertThrows(PasswordException.OverLimit.class, () -> h.verify("pw", huge));
        assertThrows(PasswordException.OverLimit.class, () -> h.verify("pw", "$2b$31$J9jZZouOuA6HEKM74sMBseNwkhjxDyWcAkVUHpJqdlmvG3vxMc6sq"));
        assertThrows(PasswordException.OverLimit.class, () -> h.verify("pw", "$scrypt$ln=30,r=8,p=1$c2FsdHNhbHRzYWx0MTIzNA$c2FsdHNhbHRzYWx0MTIzNA"));
        assertThrows(PasswordException.UnsupportedScheme.class, () -> h.verify("pw", "$argon2id$v=16$m=64,t=1,p=1$c2FsdHNhbHQ$c2FsdHNhbHRzYWx0MTIzNA"));
        assertThrows(PasswordException.Malformed.class, () -> h.verify("pw", "$argon2id$v=19$m=64,t=1,p=1,m=64$c2FsdHNhbHQ$c2FsdHNhbHRzYWx0MTIzNA"));
        assertThrows(PasswordException.UnsupportedScheme.class, () -> h.verify("pw", "md5$abc$def"));
        assertThrows(PasswordException.Malformed.class, () -> h.verify("pw", ""));
    }
}
