package io.github.wardlab.ward;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A loaded keyring file ({@code ward-keyring/v2}, FORMAT.md "Keyring file
 * v2"): opens ciphertext v3 and v4 of class 1 under any of its enabled
 * keys, seals ciphertext v4 under its primary, and derives the keyring's
 * named keys. A keyring loaded from its file follows the Go fleet's
 * rotations: a value under a key it lacks, and a ledger written under a
 * newer file, make it read the file again ({@link #refresh}: at most once a
 * second, a newer generation of the same keyring only). It is safe for
 * concurrent use, and never writes the file (rotations are the Go CLI's:
 * {@code ward keyring rotate}).
 */
public final class Keyring implements KeySource {
    /** The largest keyring file read, as the Go library's. */
    public static final int MAX_FILE = 16 << 20;

    private static final ObjectMapper JSON = new ObjectMapper();

    /** One data key: its ID, algorithm and state ("primary", "decrypt-only", "disabled"). */
    public record Key(long id, Algorithm alg, String state) {
        @Override
        public String toString() {
            return String.format("Key(%08x, %s, %s)", id, alg.wardName(), state);
        }
    }

    private final byte[] root;
    private final byte[] rootSalt;
    private volatile State st; // what the file held when last read: refresh swaps it whole
    private final Path source; // the file it was loaded from, or null (parse): refresh reads it again
    private final KeyService sourceService;
    private final Object refreshLock = new Object();
    private long refreshedAt = System.nanoTime() - REFRESH_EVERY_NANOS;

    /** A refresh reads the file at most once a second, as Go's and the Python package's. */
    private static final long REFRESH_EVERY_NANOS = 1_000_000_000L;

    /** One generation of the file's keys: what every method reads once, so a refresh is never seen half-done. */
    private static final class State {
        final long generation;
        final Map<Long, Key> keys;
        final Map<Long, byte[]> material;
        final Key primary;
        final Map<Long, byte[]> stateKeys;
        final Map<String, Anchor> anchors;
        final java.util.Set<Long> removed; // keys removed for good: their material is gone
        final Map<String, byte[]> retained; // what was kept of them, by ID and purpose (retainedId)
        final Map<ScopeId, byte[]> scoped = new ConcurrentHashMap<>();
        final Map<ScopeId, byte[]> checks = new ConcurrentHashMap<>();

        State(JsonNode payload) {
            try {
                generation = payload.path("generation").asLong(0);
                Map<Long, Key> ks = new LinkedHashMap<>();
                Map<Long, byte[]> ms = new HashMap<>();
                JsonNode list = payload.get("keys");
                if (list == null || !list.isArray()) {
                    throw new WardException.CorruptFile("a keyring payload without keys");
                }
                Key p = null;
                for (JsonNode k : list) {
                    Key key = new Key(k.path("id").asLong(-1), Algorithm.ofName(text(k, "alg")), text(k, "state"));
                    byte[] m = Wire.b64std(text(k, "material"), "material");
                    if (key.id() < 0 || key.id() > 0xffffffffL || m.length != key.alg().keySize()) {
                        throw new WardException.CorruptFile(String.format("key %08x: an ID or material of the wrong size", key.id()));
                    }
                    if ("primary".equals(key.state())) {
                        if (p != null) {
                            throw new WardException.CorruptFile("a keyring needs exactly one primary key");
                        }
                        p = key;
                    }
                    ks.put(key.id(), key);
                    ms.put(key.id(), m);
                }
                if (p == null) {
                    throw new WardException.CorruptFile("a keyring needs exactly one primary key");
                }
                keys = Collections.unmodifiableMap(ks);
                material = ms;
                primary = p;
                stateKeys = stateKeys(payload.get("state_keys"));
                anchors = anchors(payload.get("anchors"));
                removed = removed(payload.get("removed"), ks.keySet());
                retained = retained(payload.get("retained"), removed);
            } catch (WardException.UnsupportedVersion e) {
                throw new WardException.CorruptFile("a keyring payload: " + e.getMessage());
            }
        }
    }

    /** Where the keyring file anchors a database's ledger: the counter and state epoch it last saw. */
    record Anchor(long counter, long epoch) {}
    /** A key and a scope: what K_scope and its check key are derived for. */
    private record ScopeId(long key, ByteBuffer scope) {}

    private Keyring(JsonNode payload, Path source, KeyService sourceService) {
        root = Wire.b64std(text(payload, "root"), "root");
        rootSalt = Wire.b64std(text(payload, "root_salt"), "root_salt");
        if (root.length != 32 || rootSalt.length != 32) {
            throw new WardException.CorruptFile("a keyring root of the wrong size");
        }
        st = new State(payload);
        this.source = source;
        this.sourceService = sourceService;
    }

    private static Map<Long, byte[]> stateKeys(JsonNode list) {
        Map<Long, byte[]> out = new HashMap<>();
        if (list == null || list.isNull()) {
            return out;
        }
        if (!list.isArray()) {
            throw new WardException.CorruptFile("a keyring payload whose state_keys is not a list");
        }
        for (JsonNode s : list) {
            if (!s.path("epoch").isIntegralNumber()) {
                throw new WardException.CorruptFile("a state key without an epoch");
            }
            out.put(s.get("epoch").asLong(), Wire.b64std(text(s, "secret"), "secret"));
        }
        return out;
    }

    /** At most this many removed keys, and retained derivations, as Go's keyring. */
    static final int MAX_RETAINED = 4096;

    /** The IDs of keys removed for good (never reused, never a held key's). */
    private static java.util.Set<Long> removed(JsonNode list, java.util.Set<Long> held) {
        java.util.Set<Long> out = new java.util.HashSet<>();
        if (list == null || list.isNull()) {
            return out;
        }
        if (!list.isArray() || list.size() > MAX_RETAINED) {
            throw new WardException.CorruptFile("a keyring's removed keys: not a list, or too many");
        }
        for (JsonNode id : list) {
            long v = id.asLong(0);
            if (!id.canConvertToLong() || v <= 0 || v > 0xffffffffL || held.contains(v)) {
                throw new WardException.CorruptFile("a keyring's removed keys: a bad ID");
            }
            out.add(v);
        }
        return out;
    }

    /** What was kept of removed keys ({@code [{"id", "purpose", "key"}]}: 32 bytes each), by retainedId. */
    private static Map<String, byte[]> retained(JsonNode list, java.util.Set<Long> removed) {
        Map<String, byte[]> out = new HashMap<>();
        if (list == null || list.isNull()) {
            return out;
        }
        if (!list.isArray() || list.size() > MAX_RETAINED) {
            throw new WardException.CorruptFile("a keyring's retained derivations: not a list, or too many");
        }
        for (JsonNode r : list) {
            long id = r.path("id").asLong(0);
            String purpose = r.path("purpose").asText("");
            byte[] key = Wire.b64std(text(r, "key"), "retained key");
            if (key.length != 32 || purpose.length() > 256 || !removed.contains(id)) {
                throw new WardException.CorruptFile("a keyring's retained derivation: of a key not removed, or of the wrong size");
            }
            out.put(retainedId(id, purpose), key);
        }
        return out;
    }

    private static String retainedId(long id, String purpose) {
        return id + "\0" + purpose;
    }

    private static Map<String, Anchor> anchors(JsonNode obj) {
        Map<String, Anchor> out = new HashMap<>();
        if (obj == null || obj.isNull()) {
            return out;
        }
        if (!obj.isObject()) {
            throw new WardException.CorruptFile("a keyring payload whose anchors is not an object");
        }
        obj.properties().forEach(e -> {
            JsonNode a = e.getValue();
            if (!a.isObject() || !a.path("counter").canConvertToLong() || (a.has("epoch") && !a.get("epoch").canConvertToLong())) {
                throw new WardException.CorruptFile("a keyring anchor that is not {counter, epoch}");
            }
            out.put(e.getKey(), new Anchor(a.path("counter").asLong(), a.path("epoch").asLong(0)));
        });
        return out;
    }

    private static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        if (v == null || !v.isTextual()) {
            throw new WardException.CorruptFile("a keyring payload without a text field " + field);
        }
        return v.asText();
    }

    /**
     * Reads and opens a keyring file with the key service that wraps it;
     * {@link #refresh} reads it again (a value under a key it lacks, and a
     * ledger written under a newer file, call it on their own).
     */
    public static Keyring load(Path path, KeyService ks) {
        return read(path, ks, path);
    }

    private static Keyring read(Path path, KeyService ks, Path source) {
        try {
            return parse(Files.readBounded(path, MAX_FILE, "a keyring file"), ks, source);
        } catch (IOException e) {
            throw new WardException("reading the keyring file " + path + ": " + e.getClass().getSimpleName());
        }
    }

    /** Opens a keyring file's bytes with the key service that wraps it (it never re-reads them). */
    public static Keyring parse(byte[] file, KeyService ks) {
        return parse(file, ks, null);
    }

    /**
     * Reads the file this keyring was loaded from again, at most once a
     * second, and takes it if it is a newer generation of the same keyring
     * (Go's {@code Keyring.Reload}: it never goes back), so a long-running
     * process follows another's rotation: the primary, the keys, the state
     * keys and anchors of the new file, and a retired key's values no longer
     * open. Whether it moved on; false for a keyring parsed from bytes. A
     * file that holds another keyring is {@link WardException.CorruptFile}.
     */
    public boolean refresh() {
        if (source == null) {
            return false;
        }
        synchronized (refreshLock) {
            long now = System.nanoTime();
            if (now - refreshedAt < REFRESH_EVERY_NANOS) {
                return false;
            }
            refreshedAt = now;
            Keyring fresh = read(source, sourceService, null);
            if (!java.security.MessageDigest.isEqual(fresh.root, root) || !java.security.MessageDigest.isEqual(fresh.rootSalt, rootSalt)) {
                throw new WardException.CorruptFile("the keyring file now holds keyring " + fresh.id() + ", not " + id());
            }
            if (fresh.st.generation <= st.generation) {
                return false;
            }
            st = fresh.st;
            return true;
        }
    }

    /** refresh, for a caller that reports its own error when it fails. */
    boolean refreshQuietly() {
        try {
            return refresh();
        } catch (WardException e) {
            return false;
        }
    }

    private static Keyring parse(byte[] file, KeyService ks, Path source) {
        JsonNode doc;
        try {
            doc = JSON.readTree(file);
        } catch (IOException e) {
            throw new WardException.CorruptFile("a keyring file that is not JSON");
        }
        if (doc == null || !doc.isObject()) {
            throw new WardException.CorruptFile("a keyring file that is not a JSON object");
        }
        String fmt = doc.path("format").asText("");
        if (!fmt.equals("ward-keyring/v2")) {
            throw new WardException.UnsupportedVersion("keyring format " + Wire.clip(fmt, 40) + " (this package reads ward-keyring/v2: 'ward keyring rewrap' writes it)");
        }
        JsonNode wrap = doc.path("wrap");
        String provider = wrap.path("provider").asText(""), keyId = wrap.path("key_id").asText("");
        if (!provider.equals(ks.provider()) || !keyId.equals(ks.keyId())) {
            throw new WardException.WrongWrapper("the file is sealed under " + Wire.clip(provider, 20) + ":" + Wire.clip(keyId, 40) + ", given " + ks.provider() + ":" + ks.keyId());
        }
        byte[] aad = (fmt + "\0" + provider + "\0" + keyId).getBytes(StandardCharsets.UTF_8);
        byte[] plain = unwrap(doc, aad, ks, "keyring");
        try {
            return new Keyring(JSON.readTree(plain), source, ks);
        } catch (IOException e) {
            throw new WardException.CorruptFile("a keyring payload that is not JSON");
        } finally {
            Arrays.fill(plain, (byte) 0);
        }
    }

    /** A keyring's or grant's payload: its file key unwrapped by ks under purpose, then the payload opened with aad. */
    static byte[] unwrap(JsonNode doc, byte[] aad, KeyService ks, String purpose) {
        byte[] wrapped = Wire.b64std(doc.path("wrapped_key").asText(""), "wrapped_key");
        byte[] sealed = Wire.b64std(doc.path("sealed").asText(""), "sealed");
        if (wrapped.length > 1024) {
            throw new WardException.CorruptFile("a wrapped key longer than 1024 bytes");
        }
        Map<String, String> ctx = Map.of("ward:purpose", purpose, "ward:aad-sha256", Wire.hex(MasterKey.sha256(aad)));
        byte[] fileKey;
        try {
            fileKey = ks.decrypt(wrapped, ctx);
        } catch (WardException.KeyServiceFailure e) {
            if (e.kind() != WardException.KeyServiceFailure.Kind.INVALID_CIPHERTEXT) {
                throw e; // the key service's own fault (down, throttled, denied): the file is not at fault
            }
            throw new WardException.CorruptFile("unwrapping the file key: " + e.getMessage());
        } catch (WardException e) {
            throw new WardException.CorruptFile("unwrapping the file key: " + e.getMessage());
        }
        try {
            if (fileKey.length != 32 || sealed.length < 28) {
                throw new WardException.CorruptFile("a file key or sealed payload of the wrong size");
            }
            return Crypto.open(Algorithm.AES_256_GCM, fileKey, Arrays.copyOf(sealed, 12), Arrays.copyOfRange(sealed, 12, sealed.length), aad);
        } catch (WardException.Authentication e) {
            throw new WardException.CorruptFile("the " + purpose + " file failed authentication");
        } finally {
            Arrays.fill(fileKey, (byte) 0);
        }
    }

    /** {@code kr-} and 16 hex digits, stable across rotations. */
    public String id() {
        return "kr-" + Wire.hex(Arrays.copyOf(MasterKey.sha256(Wire.concat("ward keyring id v1\0".getBytes(StandardCharsets.US_ASCII), rootSalt)), 8));
    }

    /** The file's generation: each write of the keyring raises it. */
    public long generation() {
        return st.generation;
    }

    /** The key new values are sealed under. */
    public Key primary() {
        return st.primary;
    }

    /** Every key, by ID. */
    public Map<Long, Key> keys() {
        return st.keys;
    }

    /** HKDF-SHA-256 of the root for a named purpose ({@code Keyring.Derive} in Go). */
    public byte[] derive(String purpose, int length) {
        return Crypto.hkdf(root, rootSalt, Wire.concat("ward keyring derive v1\0".getBytes(StandardCharsets.US_ASCII), purpose.getBytes(StandardCharsets.UTF_8)), length);
    }

    /**
     * HKDF-SHA-256 of a key's material for a named purpose ({@code
     * Keyring.DeriveFromKey} in Go): the password pepper's key is
     * {@code deriveFromKey(id, "password-pepper", 32)}. For a key removed
     * by {@code ward keyring retire}, what the file kept of it (its pepper
     * derivation, 32 bytes), so hashes peppered with it still verify; a
     * typed error for another purpose or length, a key this keyring lacks
     * or disabled.
     */
    public byte[] deriveFromKey(long id, String purpose, int length) {
        State s = st;
        if (!s.keys.containsKey(id)) {
            byte[] kept = length == 32 ? s.retained.get(retainedId(id, purpose)) : null;
            if (kept != null) {
                return kept.clone();
            }
            if (s.removed.contains(id)) {
                throw new WardException.UnknownKey(String.format("key %08x was removed from this keyring (retired): nothing of it was kept for %s",
                        id, Wire.clip(purpose, 40)));
            }
        }
        Key k = key(s, id);
        return Crypto.hkdf(material(st, k), null,
                Wire.concat("ward keyring key-derive v1\0".getBytes(StandardCharsets.US_ASCII), purpose.getBytes(StandardCharsets.UTF_8)), length);
    }

    /** HKDF-SHA-256 of the root for a purpose of bytes ({@code Keyring.Derive} in Go, whose purposes are byte strings). */
    byte[] deriveBytes(byte[] purpose, int length) {
        return Crypto.hkdf(root, rootSalt, Wire.concat("ward keyring derive v1\0".getBytes(StandardCharsets.US_ASCII), purpose), length);
    }

    /**
     * The integrity key of an epoch for a purpose (FORMAT.md, "Integrity
     * epochs"; {@code Keyring.IntegrityKeyAt} in Go): HKDF-SHA-256 of the
     * material of key {@code epoch}. A typed error for a key this keyring
     * lacks ({@code UnknownKey}: a retired epoch) or disabled.
     */
    public byte[] integrityKeyAt(long epoch, byte[] purpose) {
        Key k = key(st, epoch);
        return Crypto.hkdf(material(st, k), null,
                Wire.concat("ward keyring key-derive v1\0ward integrity v1\0".getBytes(StandardCharsets.US_ASCII), purpose), 32);
    }

    /**
     * K_state of a state epoch, for the ledger's MAC (FORMAT.md, "Keyring
     * ledger"), or null when the file lacks that epoch (a newer file wrote
     * it). Epoch 0 is the root alone, which any copy of the file derives:
     * a file with state keys gives it only when root is set (the ledger's
     * check decides when).
     */
    byte[] stateMacKey(long epoch, boolean rootOnly) {
        byte[] salt;
        if (epoch == 0) {
            if (!st.stateKeys.isEmpty() && !rootOnly) {
                return null;
            }
            salt = null;
        } else {
            salt = st.stateKeys.get(epoch);
            if (salt == null) {
                return null;
            }
        }
        return Crypto.hkdf(root, salt, ("ward keyring state mac v1\0" + epoch).getBytes(StandardCharsets.US_ASCII), 32);
    }

    /** The anchor of a database's ledger in this file, or null. */
    Anchor anchor(String database) {
        return st.anchors.get(database);
    }

    /** The databases this file anchors. */
    java.util.Set<String> anchored() {
        return st.anchors.keySet();
    }

    /** Whether {@code ward keyring retire} removed the key of that ID from this file for good (its integrity epoch ended). */
    boolean removedKey(long id) {
        return st.removed.contains(id);
    }

    /** Whether this keyring holds a key of that ID (in any state). */
    boolean holds(long id) {
        return st.keys.containsKey(id);
    }

    /** The enabled key of an ID, or a typed error (after one re-read of the file, for an ID the keyring lacks). */
    Key key(long id) {
        return key(st, id);
    }

    /** The enabled key of an ID in s, else in the file read again once (s is then this keyring's new state), or a typed error. */
    private Key key(State s, long id) {
        Key k = s.keys.get(id);
        if (k == null && refreshQuietly()) {
            k = st.keys.get(id);
        }
        if (k == null) {
            throw new WardException.UnknownKey(String.format("key %08x is not in this keyring", id));
        }
        if (k.state().equals("disabled")) {
            throw new WardException.KeyDisabled(String.format("key %08x is disabled", id));
        }
        return k;
    }

    /** K_scope of a key for a scope, kept for the file generation's life. */
    byte[] scoped(Key k, byte[] scope) {
        return scoped(st, k, scope);
    }

    private static byte[] scoped(State s, Key k, byte[] scope) {
        byte[] m = s.material.get(k.id());
        if (m == null) { // a key of an earlier generation, retired since
            throw new WardException.UnknownKey(String.format("key %08x is not in this keyring", k.id()));
        }
        return s.scoped.computeIfAbsent(new ScopeId(k.id(), ByteBuffer.wrap(scope.clone())), x -> Ciphertext.scopedKey(k.alg(), m, scope));
    }

    /** K_check of a key's K_scope (v4), kept as K_scope is. */
    byte[] checkKey(Key k, byte[] scope) {
        return checkKey(st, k, scope);
    }

    private static byte[] checkKey(State s, Key k, byte[] scope) {
        return s.checks.computeIfAbsent(new ScopeId(k.id(), ByteBuffer.wrap(scope.clone())), x -> Ciphertext.v4CheckKey(k.alg(), scoped(s, k, scope)));
    }

    /** The AEAD key that opens a class-1 value of header h under scope. */
    @Override
    public byte[] resolve(Ciphertext.Header h, byte[] scope) {
        if (h.keyClass() != Ciphertext.CLASS_KEYRING) {
            throw new WardException.UnknownKey("a subject key sealed this value, not a keyring key");
        }
        Key k = key(h.keyId());
        State s = st; // the state key() read, or a newer one with the same key
        if (k.alg() != h.alg()) {
            throw new WardException.UnknownKey(String.format("the value's algorithm is not key %08x's", k.id()));
        }
        return h.version() == 4 ? scoped(s, k, scope) : material(s, k);
    }

    /** Opens a binary v3 or v4 ciphertext bound to context (v4: under scope). */
    public byte[] open(byte[] ct, byte[] context, byte[] scope) {
        Ciphertext.Header h = Ciphertext.header(ct);
        return Ciphertext.open(ct, h, resolve(h, scope), context);
    }

    /** Seals plaintext under the primary's K_scope as ciphertext v4, bound to context. */
    public byte[] seal(byte[] plaintext, byte[] context, byte[] scope) {
        State s = st;
        Key p = s.primary;
        return Ciphertext.sealV4(p.alg(), Ciphertext.CLASS_KEYRING, p.id(), scoped(s, p, scope), checkKey(s, p, scope), plaintext, context);
    }

    /** Seals plaintext under the primary's material as ciphertext v3, bound to context (field context v3). */
    public byte[] sealV3(byte[] plaintext, byte[] context) {
        State s = st;
        Key p = s.primary;
        return Ciphertext.sealV3(p.alg(), Ciphertext.CLASS_KEYRING, p.id(), material(s, p), plaintext, context);
    }

    private static byte[] material(State s, Key k) {
        byte[] m = s.material.get(k.id());
        if (m == null) {
            throw new WardException.UnknownKey(String.format("key %08x is not in this keyring", k.id()));
        }
        return m;
    }

    @Override
    public String toString() {
        State s = st;
        return "Keyring(" + id() + ", generation " + s.generation + ", " + s.keys.size() + " keys)";
    }

}
