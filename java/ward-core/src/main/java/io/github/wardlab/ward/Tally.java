package io.github.wardlab.ward;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * A ledger's tally (FORMAT.md, "Tallies"): a counter's count, the count its
 * hash chain started at, and the chain's newest link over the identities
 * counted since, as Go's {@code ledger.Tally}.
 *
 * @param count how many were counted in all
 * @param since the count when the chain started
 * @param head the chain's newest link (32 bytes), empty at its start
 */
public record Tally(long count, long since, byte[] head) {
    /** The size of a head. */
    public static final int HEAD_SIZE = 32;

    private static final byte[] LABEL = "ward tally v1\0".getBytes(StandardCharsets.US_ASCII);

    /** A tally holding a copy of head (null: empty). */
    public Tally {
        head = head == null ? new byte[0] : head.clone();
    }

    /** A copy of the head. */
    @Override
    public byte[] head() {
        return head.clone();
    }

    /**
     * The tally with one more identity counted: count plus one, and head =
     * SHA-256("ward tally v1" 0x00 ‖ head ‖ id), the head being 32 zero
     * bytes at the start.
     */
    public Tally add(byte[] id) {
        try {
            MessageDigest h = MessageDigest.getInstance("SHA-256");
            h.update(LABEL);
            h.update(head.length == 0 ? new byte[HEAD_SIZE] : head);
            h.update(id);
            return new Tally(count + 1, since, h.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Whether the head is empty or 32 bytes, the chain starts no later than the count, and the head is empty exactly at its start. */
    public boolean valid() {
        return (head.length == 0 || head.length == HEAD_SIZE) && Long.compareUnsigned(since, count) <= 0 && (head.length > 0) == (count != since);
    }

    /** The tally as a record spells it: count/since/head, the head in lower-case hex or "-" when empty. */
    @Override
    public String toString() {
        return Long.toUnsignedString(count) + "/" + Long.toUnsignedString(since) + "/" + (head.length == 0 ? "-" : Wire.hex(head));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Tally t && t.count == count && t.since == since && Arrays.equals(t.head, head);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(count) * 31 + Arrays.hashCode(head);
    }
}
