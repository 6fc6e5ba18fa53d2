package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The Go library's golden vectors of field contexts v3 and v4: each
 * context and scope computed the same, each value opened, and each value
 * sealed here opened again and refused in another row.
 */
class GoldenTest {
    @Test
    void contextV4() throws Exception {
        JsonNode file = Vectors.read("field/testdata/context-v4.json");
        Keyring kr = Vectors.keyring(file);
        int n = 0;
        for (JsonNode v : file.get("vectors")) {
            Column col = new Column(kr, v.get("table").asText(), v.get("column").asText(), Vectors.bind(v));
            String row = v.get("row").asText();
            Object[] values = Vectors.values(v);
            assertEquals(v.get("scope_hex").asText(), HexFormat.of().formatHex(Column.scope(v.get("table").asText(), v.get("column").asText())));
            assertEquals(v.get("context_hex").asText(), HexFormat.of().formatHex(col.contextV4(row, values)));
            byte[] ct = Vectors.hex(v.get("ciphertext_hex").asText());
            assertEquals(v.get("plaintext").asText(), new String(col.open(ct, row, values), StandardCharsets.UTF_8));
            assertEquals(v.get("plaintext").asText(), col.openText(Ciphertext.toText(ct), row, values));
            byte[] mine = col.seal(v.get("plaintext").asText().getBytes(StandardCharsets.UTF_8), row, values);
            assertEquals(4, Ciphertext.version(mine));
            assertEquals(kr.primary().id(), Ciphertext.keyId(mine));
            assertArrayEquals(col.open(ct, row, values), col.open(mine, row, values));
            assertThrows(WardException.WrongContext.class, () -> col.open(mine, row + "0", values));
            damaged(col, ct, row, values);
            n++;
        }
        assertTrue(n >= 5, "vectors read: " + n);
    }

    @Test
    void contextV3() throws Exception {
        JsonNode file = Vectors.read("field/testdata/context-v3.json");
        Keyring kr = Vectors.keyring(file);
        int n = 0;
        for (JsonNode v : file.get("vectors")) {
            Column col = new Column(kr, v.get("table").asText(), v.get("column").asText(), Vectors.bind(v));
            String row = v.get("row").asText();
            Object[] values = Vectors.values(v);
            assertEquals(v.get("context_hex").asText(), HexFormat.of().formatHex(col.contextV3(row, values)));
            byte[] ct = Vectors.hex(v.get("ciphertext_hex").asText());
            assertEquals(3, Ciphertext.version(ct));
            assertEquals(v.get("plaintext").asText(), new String(col.open(ct, row, values), StandardCharsets.UTF_8));
            assertThrows(WardException.WrongContext.class, () -> col.open(ct, row + "0", values));
            damaged(col, ct, row, values);
            n++;
        }
        assertTrue(n >= 5, "vectors read: " + n);
    }

    /**
     * A Go-sealed value with its tag damaged fails as damaged, not as
     * another row's: the context check here is computed as Go computed it.
     */
    static void damaged(Column col, byte[] ct, String row, Object[] values) {
        byte[] bad = ct.clone();
        bad[bad.length - 1] ^= 1;
        assertThrows(WardException.Authentication.class, () -> col.open(bad, row, values));
        assertThrows(WardException.WrongContext.class, () -> col.open(bad, row + "0", values));
    }

    @Test
    void textForms() throws Exception {
        JsonNode file = Vectors.read("keyring/testdata/text-forms.json");
        for (JsonNode v : file.get("valid")) {
            assertEquals(v.get("hex").asText(), HexFormat.of().formatHex(Ciphertext.fromText(v.get("text").asText())));
        }
        int n = 0;
        for (JsonNode v : file.get("malformed")) {
            String text = v.get("text").asText();
            assertThrows(WardException.class, () -> Ciphertext.fromText(text), v.get("why").asText());
            n++;
        }
        assertTrue(n >= 20, "malformed forms read: " + n);
    }
}
