package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Keyring files: opened with their key service only, every fault a typed error. */
class KeyringTest {
    @Test
    void opensWithItsMasterKeyOnly(@TempDir Path dir) throws Exception {
        JsonNode file = Vectors.read("field/testdata/context-v4.json");
        MasterKey mk = MasterKey.parse(file.get("master_key").asText());
        byte[] bytes = Vectors.JSON.writeValueAsBytes(file.get("keyring"));
        Path p = dir.resolve("kr.json");
        Files.write(p, bytes);
        Keyring kr = Keyring.load(p, mk);
        assertTrue(kr.id().matches("kr-[0-9a-f]{16}"), kr.id());
        assertEquals("primary", kr.primary().state());
        assertFalse(kr.toString().contains(file.get("master_key").asText()));
        assertFalse(mk.toString().contains(file.get("master_key").asText()));
        assertEquals(32, kr.derive("test purpose", 32).length);

        assertThrows(WardException.WrongWrapper.class, () -> Keyring.parse(bytes, MasterKey.generate()));
        ObjectNode other = file.get("keyring").deepCopy(); // the header names the wrong key: it does not unwrap
        MasterKey wrong = MasterKey.generate();
        ((ObjectNode) other.get("wrap")).put("key_id", wrong.keyId());
        assertThrows(WardException.CorruptFile.class, () -> Keyring.parse(Vectors.JSON.writeValueAsBytes(other), wrong));
        ObjectNode flipped = file.get("keyring").deepCopy();
        String sealed = flipped.get("sealed").asText();
        char c = sealed.charAt(20) == 'A' ? 'B' : 'A'; // one bit of the sealed payload changed
        flipped.put("sealed", sealed.substring(0, 20) + c + sealed.substring(21));
        assertThrows(WardException.CorruptFile.class, () -> Keyring.parse(Vectors.JSON.writeValueAsBytes(flipped), mk));
        ObjectNode v1 = file.get("keyring").deepCopy();
        v1.put("format", "ward-keyring/v1");
        assertThrows(WardException.UnsupportedVersion.class, () -> Keyring.parse(Vectors.JSON.writeValueAsBytes(v1), mk));
        assertThrows(WardException.CorruptFile.class, () -> Keyring.parse("[1, 2]".getBytes(), mk));
        assertThrows(WardException.CorruptFile.class, () -> Keyring.parse("{".getBytes(), mk));
        assertThrows(WardException.CorruptFile.class, () -> Keyring.load(dir, mk)); // a folder is no keyring file
    }

    @Test
    void masterKeyWrapsBoundToItsContext() {
        MasterKey mk = MasterKey.generate();
        byte[] w = mk.encrypt(new byte[32], Map.of("a", "1", "b", "2"));
        assertEquals(32, mk.decrypt(w, Map.of("b", "2", "a", "1")).length);
        assertThrows(WardException.Authentication.class, () -> mk.decrypt(w, Map.of("a", "1", "b", "3")));
        assertThrows(WardException.Authentication.class, () -> MasterKey.generate().decrypt(w, Map.of("a", "1", "b", "2")));
        assertThrows(WardException.class, () -> MasterKey.parse("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="));
        assertThrows(WardException.class, () -> MasterKey.fromEnvironment(Map.of()));
    }
}
