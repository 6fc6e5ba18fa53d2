package io.github.wardlab.ward;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/** Byte-level helpers shared by ward's formats (FORMAT.md). */
final class Wire {
    private Wire() {}

    /** Appends n as an unsigned LEB128 varint (Go's binary.AppendUvarint). */
    static void uvarint(ByteArrayOutputStream out, long n) {
        while (Long.compareUnsigned(n, 0x80) >= 0) {
            out.write((int) ((n & 0x7f) | 0x80));
            n >>>= 7;
        }
        out.write((int) n);
    }

    /** Reads an unsigned LEB128 varint of at most 63 bits; -1 when in ends first or it is longer. */
    static long readUvarint(java.io.ByteArrayInputStream in) {
        long v = 0;
        for (int shift = 0; shift < 63; shift += 7) {
            int b = in.read();
            if (b < 0) {
                return -1;
            }
            v |= (long) (b & 0x7f) << shift;
            if (b < 0x80) {
                return v;
            }
        }
        return -1;
    }

    /** Reads a length-prefixed field, or null when in ends first. */
    static byte[] readLp(java.io.ByteArrayInputStream in) {
        long n = readUvarint(in);
        if (n < 0 || n > in.available()) {
            return null;
        }
        byte[] out = new byte[(int) n];
        in.read(out, 0, out.length);
        return out;
    }

    /** Appends b length-prefixed: uvarint(len(b)) ‖ b. */
    static void lp(ByteArrayOutputStream out, byte[] b) {
        uvarint(out, b.length);
        out.writeBytes(b);
    }

    /** Appends s's UTF-8 bytes length-prefixed. */
    static void lp(ByteArrayOutputStream out, String s) {
        lp(out, s.getBytes(StandardCharsets.UTF_8));
    }

    /** Decodes standard, padded base64 strictly, or a typed error naming what. */
    static byte[] b64std(String s, String what) {
        try {
            return Base64.getDecoder().decode(s);
        } catch (IllegalArgumentException e) {
            throw new WardException.CorruptFile(what + " is not standard base64");
        }
    }

    /** At most n characters of s, for messages that quote input. */
    static String clip(String s, int n) {
        if (s == null) {
            return "null";
        }
        return s.length() <= n ? s : s.substring(0, n) + "…";
    }

    /** Big-endian uint32 at b[i:]. */
    static long u32(byte[] b, int i) {
        return ((b[i] & 0xffL) << 24) | ((b[i + 1] & 0xffL) << 16) | ((b[i + 2] & 0xffL) << 8) | (b[i + 3] & 0xffL);
    }

    /** Writes v as a big-endian uint32 at b[i:]. */
    static void putU32(byte[] b, int i, long v) {
        b[i] = (byte) (v >>> 24);
        b[i + 1] = (byte) (v >>> 16);
        b[i + 2] = (byte) (v >>> 8);
        b[i + 3] = (byte) v;
    }

    /** Lowercase hex of b. */
    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(2 * b.length);
        for (byte x : b) {
            sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return sb.toString();
    }

    /** Concatenates byte arrays. */
    static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int i = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, i, p.length);
            i += p.length;
        }
        return out;
    }
}
