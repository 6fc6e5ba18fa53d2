package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Grant files as the Go CLI writes them (keyring/testdata/grant-v1.json): what a grant opens, and nothing else. */
class GrantTest {
    static final HexFormat HEX = HexFormat.of();

    static Grant grant(JsonNode v) throws Exception {
        return Grant.parse(Vectors.JSON.writeValueAsBytes(v.get("grant")), MasterKey.parse(v.get("reader_master_key").asText()));
    }

    @Test
    void theVectorsOpenAsGoSays() throws Exception {
        JsonNode v = Vectors.read("keyring/testdata/grant-v1.json");
        Grant g = grant(v);
        Keyring kr = Vectors.keyring(v);
        assertEquals(kr.id(), g.keyringId());
        assertEquals(List.of("notes.title"), g.scopes());
        assertTrue(g.covers("notes", "title"));
        assertFalse(g.covers("notes", "body"));
        Map<String, Class<? extends WardException>> errors = Map.of("wrong-context", WardException.WrongContext.class,
                "not-granted", WardException.NotGranted.class);
        int opened = 0, refused = 0;
        for (JsonNode c : v.get("values")) {
            byte[] ct = HEX.parseHex(c.get("ciphertext_hex").asText()), ctx = HEX.parseHex(c.get("context_hex").asText());
            byte[] scope = Column.scope(c.get("table").asText(), c.get("column").asText());
            byte[] want = c.get("plaintext").asText().getBytes(StandardCharsets.UTF_8);
            assertArrayEquals(want, kr.open(ct, ctx, scope)); // the keyring opens every one
            if (c.get("opens").asBoolean()) {
                assertArrayEquals(want, g.open(ct, ctx, scope));
                opened++;
            } else {
                assertThrows(errors.get(c.get("error").asText()), () -> g.open(ct, ctx, scope), c.get("error").asText());
                refused++;
            }
        }
        assertTrue(opened > 0 && refused > 0);
    }

    @Test
    void aGrantsColumnOpensAndNeverSeals() throws Exception {
        JsonNode v = Vectors.read("keyring/testdata/grant-v1.json");
        Grant g = grant(v);
        Keyring kr = Vectors.keyring(v);
        String stored = new Column(kr, "notes", "title", "owner").sealText("granted", 7, "alice");
        Column granted = new Column(g, "notes", "title", "owner");
        assertEquals("granted", granted.openText(stored, 7, "alice"));
        assertThrows(WardException.WrongContext.class, () -> granted.openText(stored, 8, "alice"));
        assertThrows(WardException.NotGranted.class, () -> granted.sealText("x", 7, "alice"));
        String other = new Column(kr, "notes", "body").sealText("not granted", 7);
        assertThrows(WardException.WrongContext.class, () -> new Column(g, "notes", "body").openText(other, 7));
    }

    @Test
    void theWrongReaderOrAChangedHeaderIsRefused() throws Exception {
        JsonNode v = Vectors.read("keyring/testdata/grant-v1.json");
        byte[] file = Vectors.JSON.writeValueAsBytes(v.get("grant"));
        MasterKey owner = MasterKey.parse(v.get("master_key").asText());
        assertThrows(WardException.WrongWrapper.class, () -> Grant.parse(file, owner));
        MasterKey reader = MasterKey.parse(v.get("reader_master_key").asText());
        ObjectNode widened = v.get("grant").deepCopy();
        widened.putArray("scopes").add("notes.body").add("notes.title");
        assertThrows(WardException.CorruptFile.class, () -> Grant.parse(Vectors.JSON.writeValueAsBytes(widened), reader));
        ObjectNode later = v.get("grant").deepCopy();
        later.put("created", "2027-01-01T00:00:00Z");
        assertThrows(WardException.CorruptFile.class, () -> Grant.parse(Vectors.JSON.writeValueAsBytes(later), reader));
        ObjectNode v2 = v.get("grant").deepCopy();
        v2.put("format", "ward-grant/v2");
        assertThrows(WardException.UnsupportedVersion.class, () -> Grant.parse(Vectors.JSON.writeValueAsBytes(v2), reader));
        assertThrows(WardException.CorruptFile.class, () -> Grant.parse("[]".getBytes(), reader));
    }
}
