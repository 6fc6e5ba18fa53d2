package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** Blind indexes v1 and v2 as the Go library computes them: every vector, and the refusals. */
class BlindIndexTest {
    @Test
    void v2Vectors() throws Exception {
        JsonNode file = Vectors.read("field/testdata/blind-index-v2.json");
        Keyring kr = Vectors.keyring(file);
        String db = file.get("database").asText();
        int n = 0;
        for (JsonNode v : file.get("vectors")) {
            Normalizer norm = Normalizer.parse(v.get("normalizer").asText(), v.get("normalizer_version").asInt());
            long epoch = Long.parseLong(v.get("epoch").asText(), 16);
            BlindIndex ix = BlindIndex.v2(kr, v.get("table").asText(), v.get("column").asText(),
                new BlindIndex.Options(db, v.get("name").asText(), norm, v.get("size").asInt(), epoch));
            byte[] want = Vectors.hex(v.get("index_hex").asText());
            assertArrayEquals(want, ix.compute(Vectors.hex(v.get("value_hex").asText())), v.toString());
            assertEquals(epoch, BlindIndex.epochOf(want));
            assertEquals(epoch, ix.epoch());
            n++;
        }
        assertEquals(48, n);
    }

    @Test
    void v1Vectors() throws Exception {
        JsonNode file = Vectors.read("field/testdata/blind-index-v1.json");
        Keyring kr = Vectors.keyring(file);
        int n = 0;
        for (JsonNode v : file.get("vectors")) {
            Normalizer norm = Normalizer.parse(v.get("normalize").asText(), 1);
            BlindIndex ix = BlindIndex.v1(kr, v.get("table").asText(), v.get("column").asText(), norm, v.get("size").asInt());
            assertArrayEquals(Vectors.hex(v.get("index_hex").asText()), ix.compute(Vectors.hex(v.get("value").asText())), v.toString());
            n++;
        }
        assertEquals(16, n);
    }

    /** What each option binds: the database, the name, the normaliser, the size, the epoch. */
    @Test
    void optionsBind() throws Exception {
        Keyring kr = Vectors.keyring(Vectors.read("field/testdata/blind-index-v2.json"));
        BlindIndex.Options base = BlindIndex.Options.of("db-1");
        byte[] ref = BlindIndex.v2(kr, "users", "email", base).compute("Alice@Example.com");
        assertEquals(5 + 16, ref.length);
        for (BlindIndex.Options o : new BlindIndex.Options[] {
            BlindIndex.Options.of("db-2"),
            new BlindIndex.Options("db-1", "other", null, 0, 0),
            new BlindIndex.Options("db-1", null, Normalizer.FOLD, 0, 0),
            new BlindIndex.Options("db-1", null, null, 17, 0),
        }) {
            byte[] got = BlindIndex.v2(kr, "users", "email", o).compute("Alice@Example.com");
            assertNotEquals(Arrays.toString(ref), Arrays.toString(Arrays.copyOf(got, ref.length)), o.toString());
        }
        BlindIndex fold = BlindIndex.v2(kr, "users", "email", new BlindIndex.Options("db-1", null, Normalizer.FOLD, 0, 0));
        assertArrayEquals(fold.compute("  ALICE@example.COM\u00a0"), fold.compute("alice@example.com"));
        BlindIndex prefix = BlindIndex.v2(kr, "users", "email", new BlindIndex.Options("db-1", "p", Normalizer.prefix(3, Normalizer.FOLD), 0, 0));
        assertArrayEquals(prefix.compute("Alice"), prefix.compute("ali"));
        assertArrayEquals(prefix.compute("Straße"), prefix.compute("STR"));
    }

    @Test
    void refusals() throws Exception {
        Keyring kr = Vectors.keyring(Vectors.read("field/testdata/blind-index-v2.json"));
        assertThrows(WardException.Binding.class, () -> BlindIndex.v2(kr, "users", "email", BlindIndex.Options.of("")));
        assertThrows(WardException.Binding.class, () -> BlindIndex.v2(kr, "users", "email", new BlindIndex.Options("db", null, null, 3, 0)));
        assertThrows(WardException.Binding.class, () -> BlindIndex.v2(kr, "", "email", BlindIndex.Options.of("db")));
        assertThrows(WardException.UnknownKey.class, () -> BlindIndex.v2(kr, "users", "email", new BlindIndex.Options("db", null, null, 0, 0x7fffffffL)));
        assertThrows(WardException.Binding.class, () -> Normalizer.parse("lower", 1));
        assertThrows(WardException.UnsupportedVersion.class, () -> Normalizer.parse("nfc", 2));
        for (String bad : new String[] {"nfc+prefix-0", "nfc+prefix-257", "nfc+prefix-07", "nfc+prefix-x", "fold+prefix-"}) {
            assertThrows(WardException.Binding.class, () -> Normalizer.parse(bad, 1), bad);
        }
        assertThrows(WardException.Binding.class, () -> new Normalizer("Upper", 1, s -> s));
        BlindIndex ix = BlindIndex.v2(kr, "users", "email", BlindIndex.Options.of("db"));
        assertThrows(WardException.Binding.class, () -> ix.compute("a\ud800b"));
        for (byte[] bad : new byte[][] {new byte[0], new byte[8], new byte[5 + 33], "x".repeat(21).getBytes(StandardCharsets.US_ASCII)}) {
            assertThrows(WardException.Malformed.class, () -> BlindIndex.epochOf(bad));
        }
        byte[] zero = new byte[21];
        zero[0] = 2;
        assertThrows(WardException.Malformed.class, () -> BlindIndex.epochOf(zero));
    }

    /** Go's strings.TrimSpace, not Java's strip(): U+00A0 and U+0085 are space, U+001C is not. */
    @Test
    void trimsAsGo() {
        assertEquals("a", Normalizer.trimSpace("\u00a0\u0085 a\u3000\t"));
        assertEquals("\u001ca", Normalizer.trimSpace("\u001ca"));
    }
}
