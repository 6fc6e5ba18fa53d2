package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDateTime;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** What a column binds, and the typed errors of what it refuses. */
class ColumnTest {
    static Keyring keyring() throws Exception {
        return Vectors.keyring(Vectors.read("field/testdata/context-v4.json"));
    }

    @Test
    void bindsRowOwnerAndColumn() throws Exception {
        Keyring kr = keyring();
        Column body = new Column(kr, "messages", "body", "conversation_id", "user_id", "role");
        String ct = body.sealText("今日の予定", 42L, 7L, 1001L, "user");
        assertEquals("今日の予定", body.openText(ct, 42L, 7L, 1001L, "user"));
        assertEquals("今日の予定", body.openText(ct, "42", "7", 1001, "user")); // 7 and "7" are one value
        assertThrows(WardException.WrongContext.class, () -> body.openText(ct, 43L, 7L, 1001L, "user"));
        assertThrows(WardException.WrongContext.class, () -> body.openText(ct, 42L, 7L, 1002L, "user"));
        assertThrows(WardException.WrongContext.class, () -> body.openText(ct, 42L, 7L, 1001L, "assistant"));
        Column title = new Column(kr, "conversations", "title", "conversation_id", "user_id", "role");
        assertThrows(WardException.WrongContext.class, () -> title.openText(ct, 42L, 7L, 1001L, "user"));
        assertThrows(WardException.Binding.class, () -> body.openText(ct, 42L, 7L, 1001L));
        assertThrows(WardException.Binding.class, () -> body.seal(new byte[1], 42L, 7L, 1001L, 1.5));
        assertThrows(WardException.Binding.class, () -> body.seal(new byte[1], 4.2, 7L, 1001L, "user"));
    }

    @Test
    void damagedIsNotElsewhere() throws Exception {
        Column col = new Column(keyring(), "messages", "body");
        byte[] ct = col.seal("hello".getBytes(StandardCharsets.UTF_8), 1L);
        byte[] bad = ct.clone();
        bad[bad.length - 1] ^= 1;
        assertThrows(WardException.Authentication.class, () -> col.open(bad, 1L));
        assertThrows(WardException.WrongContext.class, () -> col.open(bad, 2L));
        byte[] subject = ct.clone();
        subject[1] = Ciphertext.CLASS_SUBJECT;
        assertThrows(WardException.UnknownKey.class, () -> col.open(subject, 1L));
        byte[] unknown = ct.clone();
        unknown[3] ^= 1;
        assertThrows(WardException.UnknownKey.class, () -> col.open(unknown, 1L));
        for (int n = 0; n < ct.length; n++) { // every truncation: a typed error, never another exception
            byte[] cut = java.util.Arrays.copyOf(ct, n);
            assertThrows(WardException.class, () -> col.open(cut, 1L));
        }
        byte[] v1 = ct.clone();
        v1[0] = 1;
        assertThrows(WardException.UnsupportedVersion.class, () -> col.open(v1, 1L));
    }

    @Test
    void boundValueEncodings() {
        assertNull(Column.encodeBound(null));
        assertArrayEquals("1".getBytes(StandardCharsets.US_ASCII), Column.encodeBound(true));
        assertArrayEquals("-7".getBytes(StandardCharsets.US_ASCII), Column.encodeBound(-7));
        // Unix microseconds, floored, also before 1970 (Go's UnixMicro).
        assertArrayEquals("-1".getBytes(StandardCharsets.US_ASCII), Column.encodeBound(Instant.ofEpochSecond(-1, 999_999_999)));
        assertArrayEquals("1000001".getBytes(StandardCharsets.US_ASCII), Column.encodeBound(LocalDateTime.of(1970, 1, 1, 0, 0, 1, 1_999)));
        assertArrayEquals("0b9d7e0a-7c1e-4d5a-9f00-3c2d1e0f4a5b".getBytes(StandardCharsets.US_ASCII),
                Column.encodeBound(UUID.fromString("0B9D7E0A-7C1E-4D5A-9F00-3C2D1E0F4A5B")));
    }
}
