package io.github.wardlab.ward;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * What a grant of a per-subject column opens (FORMAT.md, "Subject keys":
 * {@code scoped}): each subject's key of that column, unwrapped from the
 * subject's key row — the wrap the Go library keeps there for the grant's
 * column — on every use, so a forgotten subject's values (rows deleted)
 * and a private subject's (rows without wraps) never open. As the Python
 * package's {@code GrantSubjects}; it never seals.
 */
public final class GrantSubjects implements SubjectSource {
    private final DataSource db;
    private final Grant grant;
    private final String namespace;
    private final String table;
    private final String column;

    /** The subjects' keys of table.column that grant opens, read from db's {@value SubjectKeys#KEYS_TABLE}. */
    public GrantSubjects(DataSource db, Grant grant, String table, String column) {
        this.db = Objects.requireNonNull(db, "db");
        this.grant = Objects.requireNonNull(grant, "grant");
        this.namespace = grant.subjectNamespace(table, column);
        if (namespace == null) {
            throw new WardException.NotGranted("the grant does not open " + Wire.clip(table, 40) + "." + Wire.clip(column, 40) + " under subjects' keys");
        }
        this.table = table;
        this.column = column;
    }

    @Override
    public byte[] resolve(String subject, Ciphertext.Header h, byte[] scope) {
        if (h.version() != 4 || h.keyClass() != Ciphertext.CLASS_SUBJECT) {
            throw new WardException.NotGranted("a grant opens ciphertext v4 under the subject's key only");
        }
        if (!Arrays.equals(scope, Column.scope(table, column))) {
            throw new WardException.NotGranted("the grant does not name this column");
        }
        byte[] wrap = scoped(read(subject, h.keyId())).get(table + "." + column);
        if (wrap == null) {
            throw new WardException.SubjectRefused("the subject's key holds no wrap for this grant: forgotten, private, or not sealed since the grant");
        }
        SubjectKeys.Key k = SubjectKeys.payload(grant.openWrap(table, column, wrap, SubjectKeys.wrapContext(namespace, subject, h.keyId())), h.keyId(), 0);
        if (k.alg() != h.alg()) {
            throw new WardException.Malformed("a granted key that does not match its row");
        }
        return k.material();
    }

    private byte[] read(String subject, long version) {
        String sql = "SELECT scoped FROM " + SubjectKeys.KEYS_TABLE + " WHERE namespace = ? AND subject = ? AND version = ? AND held = 0";
        try (Connection c = db.getConnection(); PreparedStatement st = c.prepareStatement(sql)) {
            st.setString(1, namespace);
            st.setString(2, subject);
            st.setLong(3, version);
            try (ResultSet rs = st.executeQuery()) {
                return rs.next() ? rs.getBytes(1) : null;
            }
        } catch (SQLException e) {
            throw new WardException("reading " + SubjectKeys.KEYS_TABLE + ": SQLSTATE " + e.getSQLState());
        }
    }

    /** A key row's {@code scoped} column: the grants' wraps by {@code table.column} (ℓ(name) ‖ ℓ(wrap), repeated); a truncated tail is ignored. */
    static Map<String, byte[]> scoped(byte[] b) {
        Map<String, byte[]> out = new HashMap<>();
        if (b == null) {
            return out;
        }
        ByteArrayInputStream in = new ByteArrayInputStream(b);
        while (in.available() > 0) {
            byte[] name = Wire.readLp(in), wrap = name == null ? null : Wire.readLp(in);
            if (wrap == null) {
                break;
            }
            out.put(new String(name, StandardCharsets.UTF_8), wrap);
        }
        return out;
    }

    @Override
    public String toString() {
        return "GrantSubjects(" + table + "." + column + ")";
    }
}
