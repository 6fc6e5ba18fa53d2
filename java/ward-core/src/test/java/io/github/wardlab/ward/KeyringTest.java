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

    /**
     * A keyring loaded from its file follows the Go CLI's rotation: a value
     * under the key added since opens (the file read again), and the next
     * generation is taken; an older copy put back is never taken, another
     * keyring in its place is CorruptFile, and one parsed from bytes never
     * re-reads.
     */
    @Test
    void followsTheFileForward(@TempDir Path dir) throws Exception {
        Vectors.requireGoCli();
        Path mk = dir.resolve("mk.b64"), file = dir.resolve("kr.json");
        LedgerTest.go("keyring", "gen-master-key", "--out", mk.toString());
        LedgerTest.go("keyring", "new", "--keyring", file.toString(), "--master-key-file", mk.toString());
        byte[] first = Files.readAllBytes(file);
        Keyring kr = Keyring.load(file, MasterKey.load(mk)), parsed = Keyring.parse(first, MasterKey.load(mk));
        long generation = kr.generation(), primary = kr.primary().id();
        LedgerTest.go("keyring", "add", "--promote", "--keyring", file.toString(), "--master-key-file", mk.toString());
        Path in = Files.writeString(dir.resolve("in"), "under the new key");
        Process p = new ProcessBuilder(System.getenv("WARD_GO_CLI"), "encrypt", "--binary", "--table", "t", "--column", "c", "--row", "1",
                "--keyring", file.toString(), "--master-key-file", mk.toString()).redirectInput(in.toFile()).start();
        byte[] ct = p.getInputStream().readAllBytes();
        assertEquals(0, p.waitFor());
        Column col = new Column(kr, "t", "c");
        assertEquals("under the new key", new String(col.open(ct, 1L), java.nio.charset.StandardCharsets.UTF_8)); // read the file again
        assertTrue(kr.generation() > generation);
        assertTrue(kr.primary().id() != primary);
        assertThrows(WardException.UnknownKey.class, () -> new Column(parsed, "t", "c").open(ct, 1L));
        assertFalse(parsed.refresh());

        long now = kr.generation();
        Files.write(file, first); // an older copy put back: never taken
        Thread.sleep(1100); // a refresh reads the file at most once a second
        assertFalse(kr.refresh());
        assertEquals(now, kr.generation());
        LedgerTest.go("keyring", "new", "--keyring", dir.resolve("other.json").toString(), "--master-key-file", mk.toString());
        Files.copy(dir.resolve("other.json"), file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Thread.sleep(1100);
        assertThrows(WardException.CorruptFile.class, kr::refresh);
    }
}
