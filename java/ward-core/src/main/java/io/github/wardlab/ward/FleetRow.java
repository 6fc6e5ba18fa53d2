package io.github.wardlab.ward;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Collectors;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * One row of the process registry (FORMAT.md, "Process registry"), as Go's
 * {@code fleet.Process}, and its MAC: v1 under the keyring's derivation
 * {@code "fleet registry v1"}, or v2 ({@code v2:EPOCH:MAC}) under the
 * integrity key of the primary's epoch, bound to the database.
 *
 * @param id the registry ID ({@code p-} and 16 hex digits)
 * @param host the host name
 * @param pid the process ID
 * @param keyring the keyring's ID
 * @param generation the keyring file's generation
 * @param keys the key IDs held (enabled keys), sorted as the keyring lists them
 * @param started when the process joined (Unix ms)
 * @param seen its latest heartbeat (Unix ms)
 * @param exited whether it left cleanly
 * @param forms the forms it reads, sorted
 */
record FleetRow(String id, String host, long pid, String keyring, long generation, List<Long> keys, long started, long seen, boolean exited,
        List<String> forms) {
    static final String PURPOSE_V2 = "fleet registry";
    private static final byte[] V2_LABEL = "ward fleet row v2\0".getBytes(StandardCharsets.US_ASCII);

    /** The keys column: each ID as 8 lower-case hex digits, comma-separated. */
    String keysText() {
        return keys.stream().map(k -> String.format("%08x", k)).collect(Collectors.joining(","));
    }

    /** The caps column: the forms, comma-separated. */
    String formsText() {
        return String.join(",", forms);
    }

    /** What a row's MAC covers, every field of it (Go's rowMessage). */
    byte[] message() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (String s : new String[] {id, host, keyring, keysText()}) {
            Wire.lp(out, s);
        }
        byte[] n = new byte[8];
        for (long v : new long[] {pid, generation, started, seen}) {
            for (int i = 0; i < 8; i++) {
                n[i] = (byte) (v >>> (56 - 8 * i));
            }
            out.writeBytes(n);
        }
        out.write(exited ? 1 : 0);
        if (!forms.isEmpty()) { // a row of a release from before forms has none, and its MAC as then
            Wire.lp(out, formsText());
        }
        return out.toByteArray();
    }

    /** The v1 MAC text: hex of HMAC-SHA-256 under the keyring's "fleet registry v1" derivation. */
    String macV1(Keyring kr) {
        return HexFormat.of().formatHex(hmac(kr.derive("fleet registry v1", 32), message()));
    }

    /** The v2 MAC text under the integrity key of epoch (the primary's ID when written), bound to database. */
    String macV2(Keyring kr, long epoch, String database) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(V2_LABEL);
        byte[] e = new byte[4];
        Wire.putU32(e, 0, epoch);
        b.writeBytes(e);
        Wire.lp(b, database);
        b.writeBytes(message());
        byte[] key = kr.integrityKeyAt(epoch, PURPOSE_V2.getBytes(StandardCharsets.US_ASCII));
        return String.format("v2:%08x:", epoch) + HexFormat.of().formatHex(hmac(key, b.toByteArray()));
    }

    static byte[] hmac(byte[] key, byte[] msg) {
        try {
            Mac h = Mac.getInstance("HmacSHA256");
            h.init(new SecretKeySpec(key, "HmacSHA256"));
            return h.doFinal(msg);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }
}
