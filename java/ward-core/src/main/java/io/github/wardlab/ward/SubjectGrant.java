package io.github.wardlab.ward;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * A service's grant of one subject's ciphertext v4 values of one column
 * ({@code ward-subject-grant/v1}, FORMAT.md "Subject grant v1"; Go's
 * {@code field.Column.SubjectGrant}): K_scope per key version. It opens that
 * subject's values of that column and nothing else, and never seals: another
 * column is {@link WardException.WrongContext}, another subject too (the
 * bound value is in the context), ciphertext v1–v3 (whose key is the
 * subject key itself) {@link WardException.NotGranted}, a version it lacks
 * {@link WardException.UnknownKey}. It carries secrets: drop it with the
 * request it came with; its {@link #toString()} names no key.
 */
public final class SubjectGrant implements SubjectSource {
    /** The format it reads. */
    public static final String FORMAT = "ward-subject-grant/v1";
    /** The most key versions a grant may carry. */
    static final int MAX_KEYS = 4096;

    private static final ObjectMapper JSON = new ObjectMapper();

    private record Granted(Algorithm alg, byte[] kScope) {}

    private final String table;
    private final String column;
    private final String subject;
    private final byte[] scope;
    private final Map<Long, Granted> keys;

    private SubjectGrant(String table, String column, String subject, Map<Long, Granted> keys) {
        this.table = table;
        this.column = column;
        this.subject = subject;
        this.scope = Column.scope(table, column);
        this.keys = keys;
    }

    /** Parses a grant's JSON form (at most {@value Keyring#MAX_FILE} bytes). */
    public static SubjectGrant parse(byte[] json) {
        if (json.length > Keyring.MAX_FILE) {
            throw new WardException.CorruptFile("a subject grant over " + Keyring.MAX_FILE + " bytes");
        }
        JsonNode doc;
        try {
            doc = JSON.readTree(json);
        } catch (IOException e) {
            throw new WardException.CorruptFile("a subject grant that is not JSON");
        }
        if (doc == null || !doc.isObject() || !FORMAT.equals(doc.path("format").asText(""))) {
            throw new WardException.UnsupportedVersion("not a " + FORMAT);
        }
        JsonNode list = doc.get("keys");
        if (list == null || !list.isArray() || list.size() > MAX_KEYS) {
            throw new WardException.CorruptFile("a subject grant without a list of keys, or with too many");
        }
        Map<Long, Granted> keys = new HashMap<>();
        for (JsonNode k : list) {
            Algorithm alg;
            try {
                alg = Algorithm.ofName(text(k, "alg"));
            } catch (WardException.UnsupportedVersion e) {
                throw new WardException.CorruptFile("a subject grant key of an unknown algorithm");
            }
            byte[] m = Wire.b64std(text(k, "material"), "material");
            long version = k.path("version").isIntegralNumber() ? k.path("version").asLong() : -1;
            if (m.length != alg.keySize() || version < 0 || version > 0xffffffffL) {
                throw new WardException.CorruptFile("a subject grant key of the wrong size or version");
            }
            keys.put(version, new Granted(alg, m));
        }
        return new SubjectGrant(text(doc, "table"), text(doc, "column"), text(doc, "subject"), keys);
    }

    /** Parses a grant's JSON text. */
    public static SubjectGrant parse(String json) {
        return parse(json.getBytes(StandardCharsets.UTF_8));
    }

    private static String text(JsonNode n, String field) {
        JsonNode v = n.get(field);
        if (v == null || !v.isTextual() || v.asText().isEmpty()) {
            throw new WardException.CorruptFile("a subject grant without a text field " + field);
        }
        return v.asText();
    }

    /** The granted column's table. */
    public String table() {
        return table;
    }

    /** The granted column. */
    public String column() {
        return column;
    }

    /** The subject whose values it opens. */
    public String subject() {
        return subject;
    }

    @Override
    public byte[] resolve(String subject, Ciphertext.Header h, byte[] scope) {
        if (h.version() != 4 || h.keyClass() != Ciphertext.CLASS_SUBJECT) {
            throw new WardException.NotGranted("a subject grant opens ciphertext v4 under the subject's key only");
        }
        if (!Arrays.equals(scope, this.scope)) {
            throw new WardException.WrongContext("the grant does not name this column");
        }
        if (!subject.equals(this.subject)) {
            throw new WardException.WrongContext("the grant names another subject");
        }
        Granted g = keys.get(h.keyId());
        if (g == null || g.alg() != h.alg()) {
            throw new WardException.UnknownKey("the grant does not hold this key version");
        }
        return g.kScope();
    }

    @Override
    public String toString() {
        return "SubjectGrant(" + table + "." + column + ", " + keys.size() + " keys)";
    }
}
