package io.github.wardlab.ward;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * A grant file ({@code ward-grant/v1}, FORMAT.md "Grant file v1"), as the Go
 * CLI's {@code ward grant} writes it: a reader's keys for the ciphertext v4
 * values of a few columns, wrapped by the reader's own key service. It opens
 * the class-1 v4 values of the columns it names, under the keys that
 * existed when it was made, and nothing else: another column is
 * {@link WardException.WrongContext}, ciphertext v3 (whose key opens every
 * column) or a subject's key {@link WardException.NotGranted}, a key added
 * after the grant {@link WardException.UnknownKey}. A grant never seals.
 * Read-only and safe for concurrent use.
 */
public final class Grant implements KeySource {
    /** The format this class reads. */
    public static final String FORMAT = "ward-grant/v1";

    private static final ObjectMapper JSON = new ObjectMapper();

    /** A granted key: a column's scope and a key ID. */
    private record Slot(ByteBuffer scope, long keyId) {}

    private record Granted(Algorithm alg, byte[] material) {}

    private final String id;
    private final String keyringId;
    private final List<String> scopes;
    private final Map<Slot, Granted> keys = new HashMap<>();
    private final Map<String, String> subjectColumns = new HashMap<>(); // table.column -> namespace, of per-subject columns

    private Grant(JsonNode doc, JsonNode payload) {
        id = text(doc, "id");
        keyringId = text(doc, "keyring");
        List<String> sc = new ArrayList<>();
        for (JsonNode s : array(doc, "scopes")) {
            sc.add(textOf(s, "scopes"));
        }
        scopes = List.copyOf(sc);
        TreeSet<String> named = new TreeSet<>(), ids = new TreeSet<>();
        for (JsonNode k : array(payload, "keys")) {
            Algorithm alg;
            try {
                alg = Algorithm.ofName(text(k, "alg"));
            } catch (WardException.UnsupportedVersion e) {
                throw new WardException.CorruptFile("a grant key of an unknown algorithm");
            }
            byte[] material = Wire.b64std(text(k, "material"), "material");
            long keyId = k.path("id").isIntegralNumber() ? k.path("id").asLong() : -1;
            if (material.length != alg.keySize() || keyId < 0 || keyId > 0xffffffffL) {
                throw new WardException.CorruptFile("a grant key of the wrong size or ID");
            }
            String table = text(k, "table"), column = text(k, "column");
            String ns = k.path("namespace").isTextual() ? k.path("namespace").asText() : "";
            // A per-subject column's key opens its subjects' wraps of that column (GrantSubjects).
            byte[] scope = ns.isEmpty() ? Column.scope(table, column) : subjectGrantScope(ns, table, column);
            if (!ns.isEmpty()) {
                subjectColumns.put(table + "." + column, ns);
            }
            keys.put(new Slot(ByteBuffer.wrap(scope), keyId), new Granted(alg, material));
            named.add(table + "." + column);
            ids.add(String.format("%08x", keyId));
        }
        List<String> headerKeys = new ArrayList<>();
        for (JsonNode k : array(doc, "keys")) {
            headerKeys.add(textOf(k, "keys"));
        }
        if (!new ArrayList<>(named).equals(scopes) || !new ArrayList<>(ids).equals(headerKeys)) {
            throw new WardException.CorruptFile("a grant's header does not name its keys");
        }
    }

    /** The namespace of table.column's subject keys, for a grant of a per-subject column; null otherwise. */
    String subjectNamespace(String table, String column) {
        return subjectColumns.get(table + "." + column);
    }

    /** Opens a subject's wrap of a granted per-subject column (a key row's {@code scoped} entry), bound to context. */
    byte[] openWrap(String table, String column, byte[] wrap, byte[] context) {
        String ns = subjectNamespace(table, column);
        if (ns == null) {
            throw new WardException.NotGranted("the grant does not open " + Wire.clip(table, 40) + "." + Wire.clip(column, 40) + " under subjects' keys");
        }
        return open(wrap, context, subjectGrantScope(ns, table, column));
    }

    /** The scope a per-subject column's keys are wrapped under for grants. */
    static byte[] subjectGrantScope(String namespace, String table, String column) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes("ward/subject-grant/v1\0".getBytes(StandardCharsets.US_ASCII));
        Wire.lp(out, namespace);
        Wire.lp(out, table);
        Wire.lp(out, column);
        return out.toByteArray();
    }

    /** Reads and opens a grant file with the reader's key service. */
    public static Grant load(Path path, KeyService ks) {
        try {
            return parse(Files.readBounded(path, Keyring.MAX_FILE, "a grant file"), ks);
        } catch (IOException e) {
            throw new WardException("reading the grant file: " + e.getClass().getSimpleName());
        }
    }

    /** Opens a grant file's bytes with the reader's key service. */
    public static Grant parse(byte[] file, KeyService ks) {
        JsonNode doc;
        try {
            doc = JSON.readTree(file);
        } catch (IOException e) {
            throw new WardException.CorruptFile("a grant file that is not JSON");
        }
        if (doc == null || !doc.isObject()) {
            throw new WardException.CorruptFile("a grant file that is not a JSON object");
        }
        String fmt = doc.path("format").asText("");
        if (!fmt.equals(FORMAT)) {
            throw new WardException.UnsupportedVersion("grant format " + Wire.clip(fmt, 40));
        }
        JsonNode wrap = doc.path("wrap");
        String provider = text(wrap, "provider"), keyId = text(wrap, "key_id");
        if (!provider.equals(ks.provider()) || !keyId.equals(ks.keyId())) {
            throw new WardException.WrongWrapper("the grant is sealed under " + Wire.clip(provider, 20) + ":" + Wire.clip(keyId, 40) + ", given " + ks.provider() + ":" + ks.keyId());
        }
        List<String> scopes = new ArrayList<>(), ids = new ArrayList<>();
        array(doc, "scopes").forEach(s -> scopes.add(textOf(s, "scopes")));
        array(doc, "keys").forEach(s -> ids.add(textOf(s, "keys")));
        ByteArrayOutputStream aad = new ByteArrayOutputStream();
        for (String part : List.of(fmt, text(doc, "id"), text(doc, "keyring"), seconds(text(doc, "created")),
                String.join("\n", scopes), String.join(",", ids), provider, keyId)) {
            Wire.lp(aad, part);
        }
        byte[] plain = Keyring.unwrap(doc, aad.toByteArray(), ks, "grant");
        try {
            return new Grant(doc, JSON.readTree(plain));
        } catch (IOException e) {
            throw new WardException.CorruptFile("a grant payload that is not JSON");
        } finally {
            Arrays.fill(plain, (byte) 0);
        }
    }

    /** An RFC 3339 time as the Go library wrote it into the header's AD: UTC, whole seconds. */
    private static String seconds(String t) {
        try {
            return OffsetDateTime.parse(t).atZoneSameInstant(ZoneOffset.UTC).truncatedTo(ChronoUnit.SECONDS)
                    .format(DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss'Z'"));
        } catch (DateTimeParseException e) {
            throw new WardException.CorruptFile("a grant's created time is not RFC 3339");
        }
    }

    private static Iterable<JsonNode> array(JsonNode n, String field) {
        JsonNode v = n.get(field);
        if (v == null || !v.isArray()) {
            throw new WardException.CorruptFile("a grant without a list " + field);
        }
        return v;
    }

    private static String text(JsonNode n, String field) {
        JsonNode v = n == null ? null : n.get(field);
        if (v == null || !v.isTextual()) {
            throw new WardException.CorruptFile("a grant without a text field " + field);
        }
        return v.asText();
    }

    private static String textOf(JsonNode v, String what) {
        if (!v.isTextual()) {
            throw new WardException.CorruptFile("a grant's " + what + " holds a value that is not text");
        }
        return v.asText();
    }

    /** The grant's ID ({@code g-} and 16 hex digits). */
    public String id() {
        return id;
    }

    /** The ID of the keyring the grant was made from. */
    public String keyringId() {
        return keyringId;
    }

    /** The columns it opens, {@code table.column}, sorted. */
    public List<String> scopes() {
        return scopes;
    }

    /** Whether the grant opens table.column's values under keyring keys. */
    public boolean covers(String table, String column) {
        return keys.keySet().stream().anyMatch(s -> s.scope().equals(ByteBuffer.wrap(Column.scope(table, column))));
    }

    @Override
    public byte[] resolve(Ciphertext.Header h, byte[] scope) {
        if (h.version() != 4 || h.keyClass() != Ciphertext.CLASS_KEYRING) {
            throw new WardException.NotGranted("a grant opens ciphertext v4 under keyring keys only");
        }
        ByteBuffer sc = ByteBuffer.wrap(scope);
        if (keys.keySet().stream().noneMatch(s -> s.scope().equals(sc))) {
            throw new WardException.WrongContext("the grant does not name this column");
        }
        Granted g = keys.get(new Slot(sc, h.keyId()));
        if (g == null || g.alg() != h.alg()) {
            throw new WardException.UnknownKey(String.format("key %08x was added after the grant was made", h.keyId()));
        }
        return g.material();
    }

    /** Opens a binary v4 ciphertext of a granted column, bound to context, under scope. */
    public byte[] open(byte[] ct, byte[] context, byte[] scope) {
        Ciphertext.Header h = Ciphertext.header(ct);
        return Ciphertext.open(ct, h, resolve(h, scope), context);
    }

    @Override
    public String toString() {
        return "Grant(" + id + ", " + String.join(",", scopes) + ")";
    }
}
