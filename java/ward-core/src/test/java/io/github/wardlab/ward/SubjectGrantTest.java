package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.sqlite.SQLiteDataSource;

/**
 * The two ways a reader that holds no keyring opens per-subject values, over
 * Go's vectors: a subject grant (one subject's values of one column,
 * field/subject/testdata/subject-v4.json's subject_grant_alice) and a grant
 * of a per-subject column, whose keys come from the subjects' key rows
 * (field/subject/testdata/grant-subject-v1.json, in SQLite). Each opens what
 * it names and refuses the rest, typed; neither seals.
 */
class SubjectGrantTest {
    @Test
    void aSubjectGrantOpensOneSubjectsValuesOfOneColumn() throws Exception {
        JsonNode g = Vectors.read("field/subject/testdata/subject-v4.json");
        SubjectGrant grant = SubjectGrant.parse(Vectors.JSON.writeValueAsBytes(g.get("subject_grant_alice")));
        assertFalse(grant.toString().contains(g.get("subject_grant_alice").get("keys").get(0).get("material").asText()));
        Column col = Column.of(grant, "user_id", "user_id");
        for (JsonNode v : g.get("values")) {
            byte[] ct = Vectors.hex(v.get("ciphertext_hex").asText());
            long row = v.get("row").asLong();
            if (v.get("subject").asText().equals("alice")) {
                assertEquals(v.get("plaintext").asText(), new String(col.open(ct, row, "alice"), StandardCharsets.UTF_8));
                assertThrows(WardException.WrongContext.class, () -> col.open(ct, row, "bob")); // presented as another user's
            } else {
                assertThrows(WardException.WrongContext.class, () -> col.open(ct, row, v.get("subject").asText()));
            }
        }
        byte[] alice = Vectors.hex(g.get("values").get(0).get("ciphertext_hex").asText());
        // Another column's values (another scope) are not the grant's.
        assertThrows(WardException.WrongContext.class, () -> grant.resolve("alice", Ciphertext.header(alice), Column.scope("conversations", "title")));
        assertThrows(WardException.NotGranted.class, () -> col.seal(new byte[1], 1L, "alice"));
        byte[] v3 = Vectors.hex(Vectors.read("field/subject/testdata/store-v1.json").get("values").get(0).get("ciphertext_hex").asText());
        assertThrows(WardException.NotGranted.class, () -> col.open(v3, 1L, "alice"));
        for (String bad : new String[] {"{}", "[]", "{\"format\":\"ward-subject-grant/v1\"}", "{\"format\":\"ward-subject-grant/v1\",\"keys\":[{}]}", "x"}) {
            assertThrows(WardException.class, () -> SubjectGrant.parse(bad), bad);
        }
    }

    @Test
    void aGrantOfAPerSubjectColumnOpensFromTheKeyRows(@TempDir Path dir) throws Exception {
        JsonNode v = Vectors.read("field/subject/testdata/grant-subject-v1.json");
        Grant g = Grant.parse(Vectors.JSON.writeValueAsBytes(v.get("grant")), MasterKey.parse(v.get("reader_master_key").asText()));
        SQLiteDataSource db = new SQLiteDataSource();
        db.setUrl("jdbc:sqlite:" + dir.resolve("keys.db"));
        try (Connection c = db.getConnection()) {
            c.createStatement().executeUpdate("CREATE TABLE ward_subject_keys (namespace TEXT, subject TEXT, version BIGINT, held SMALLINT, scoped BLOB)");
            for (JsonNode k : v.get("keys")) {
                PreparedStatement st = c.prepareStatement("INSERT INTO ward_subject_keys VALUES (?, ?, ?, ?, ?)");
                st.setString(1, v.get("namespace").asText());
                st.setString(2, k.get("subject").asText());
                st.setLong(3, k.get("version").asLong());
                st.setInt(4, k.get("held").asInt());
                st.setBytes(5, Vectors.hex(k.get("scoped_hex").asText()));
                st.executeUpdate();
            }
        }
        String table = v.get("table").asText(), column = v.get("column").asText();
        String[] bind = Vectors.bind(v);
        Column col = new Column(g, table, column, bind).perSubject(new GrantSubjects(db, g, table, column), bind[0]);
        int opened = 0;
        for (JsonNode val : v.get("values")) {
            byte[] ct = Vectors.hex(val.get("ciphertext_hex").asText());
            long row = val.get("row").asLong();
            if (val.get("opens").asBoolean()) {
                assertEquals(val.get("plaintext").asText(), new String(col.open(ct, row, val.get("subject").asText()), StandardCharsets.UTF_8));
                assertThrows(WardException.class, () -> col.open(ct, row, "bob")); // presented as another user's: no such key of bob's
                opened++;
            } else {
                assertThrows(WardException.SubjectRefused.class, () -> col.open(ct, row, val.get("subject").asText()));
            }
        }
        assertTrue(opened > 0);
        assertThrows(WardException.NotGranted.class, () -> col.seal(new byte[1], 1L, "alice"));
        assertThrows(WardException.NotGranted.class, () -> new GrantSubjects(db, g, table, "title"));
        assertThrows(WardException.NotGranted.class, () -> new Column(g, table, column, bind).perSubject(new SubjectKeys(db, Vectors.keyring(v), "users"), bind[0]));
        try (Connection c = db.getConnection()) {
            c.createStatement().executeUpdate("DELETE FROM ward_subject_keys WHERE subject = 'alice'"); // forgotten
        }
        for (JsonNode val : v.get("values")) {
            if (val.get("subject").asText().equals("alice")) {
                assertThrows(WardException.SubjectRefused.class, () -> col.open(Vectors.hex(val.get("ciphertext_hex").asText()), val.get("row").asLong(), "alice"));
            }
        }
        assertEquals(0, GrantSubjects.scoped(new byte[] {5, 'a'}).size()); // a truncated entry is ignored
    }
}
