package io.github.wardlab.ward.password;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * Parses every hash format ward verifies (FORMAT.md "Password hashes", and
 * Go's password/decode.go): PHC strings of Argon2, scrypt and PBKDF2,
 * passlib's and Django's forms, bcrypt, Django's bcrypt_sha256, Spring
 * Security's {id} forms, and ward's key-bearing forms. Nothing is computed.
 */
final class Decoder {
    private Decoder() {}

    static final int MAX_ENCODED = 1024;
    static final String KEY_BEARING_ARGON2 = "ward-argon2id-kek";
    static final String KEY_BEARING_PBKDF2 = "ward-pbkdf2-sha256-kek";
    private static final Base64.Decoder B64 = Base64.getDecoder();
    private static final String BCRYPT_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    static Decoded decode(String s) {
        if (s.length() > MAX_ENCODED) {
            throw new PasswordException.Malformed("a hash longer than " + MAX_ENCODED + " characters");
        }
        if (s.startsWith("{")) {
            return spring(s);
        }
        if (s.startsWith("$2")) {
            return bcrypt(s, "bcrypt", false);
        }
        if (bareSpringScrypt(s)) {
            return springScrypt(s);
        }
        if (s.startsWith("$")) {
            return phc(s, "phc");
        }
        if (s.startsWith("pbkdf2_sha256$") || s.startsWith("pbkdf2_sha1$")) {
            return djangoPBKDF2(s);
        }
        if (s.startsWith("argon2$")) {
            return phc(s.substring("argon2".length()), "django-argon2");
        }
        if (s.startsWith("bcrypt_sha256$")) {
            return bcrypt(s.substring("bcrypt_sha256$".length()), "django-bcrypt_sha256", true);
        }
        if (s.isEmpty()) {
            throw new PasswordException.Malformed("an empty hash");
        }
        throw new PasswordException.UnsupportedScheme("an unrecognised hash format");
    }

    /** $id$v=19$params$salt$hash, and passlib's $pbkdf2-sha256$rounds$salt$hash. */
    static Decoded phc(String s, String format) {
        String[] parts = s.split("\\$", -1);
        if (parts.length < 2 || !parts[0].isEmpty()) {
            throw bad(format, "does not start with $");
        }
        String id = parts[1];
        boolean kek = id.equals(KEY_BEARING_ARGON2) || id.equals(KEY_BEARING_PBKDF2);
        if (id.equals(KEY_BEARING_ARGON2)) {
            id = "argon2id";
            format = KEY_BEARING_ARGON2;
        } else if (id.equals(KEY_BEARING_PBKDF2)) {
            id = "pbkdf2-sha256";
            format = KEY_BEARING_PBKDF2;
        }
        Scheme scheme = Scheme.ofId(id);
        List<String> rest = List.of(parts).subList(2, parts.length);
        if (scheme.family() == Scheme.Family.ARGON2) {
            if (rest.isEmpty() || !rest.get(0).startsWith("v=")) {
                throw new PasswordException.UnsupportedScheme("Argon2 version 0x10 (no v= field)");
            }
            if (!rest.get(0).equals("v=19")) {
                throw new PasswordException.UnsupportedScheme("Argon2 version other than v=19 (0x13)");
            }
            rest = rest.subList(1, rest.size());
        }
        if (rest.size() != 3) {
            throw bad(format, "want 3 fields after the identifier, got " + rest.size());
        }
        boolean passlibRounds = scheme.family() == Scheme.Family.PBKDF2 && !rest.get(0).contains("=");
        Fields f = passlibRounds ? Fields.rounds(rest.get(0)) : Fields.parse(scheme, rest.get(0), format);
        if (passlibRounds) {
            format = "passlib";
        }
        byte[] salt = b64(rest.get(1), passlibRounds, format, "salt");
        byte[] hash = b64(rest.get(2), passlibRounds, format, "hash");
        if (salt.length == 0 || hash.length == 0) {
            throw bad(format, "empty salt or hash");
        }
        if (f.keyLen != 0 && f.keyLen != hash.length) {
            throw bad(format, "l= does not match the hash length");
        }
        if (kek && hash.length != 32) {
            throw bad(format, "a key-bearing hash stores a 32-byte verifier");
        }
        Params p = new Params(scheme, f.m, f.t, (int) f.p, 0, (int) f.ln, (int) f.r, (int) f.sp, f.i, salt.length, hash.length);
        return new Decoded(p, format, salt, hash, null, f.pepper, false, kek);
    }

    private static byte[] b64(String v, boolean passlib, String format, String what) {
        if (passlib) { // passlib's adapted base64 writes '.' for '+'
            v = v.replace('.', '+');
        }
        if (v.contains("=")) {
            throw bad(format, what + " is not unpadded base64");
        }
        try {
            byte[] b = B64.decode(v);
            if (!Base64.getEncoder().withoutPadding().encodeToString(b).equals(v)) {
                throw bad(format, what + " is not canonical base64");
            }
            return b;
        } catch (IllegalArgumentException e) {
            throw bad(format, what + " is not valid base64");
        }
    }

    /** The k=v parameters of a PHC string. */
    static final class Fields {
        long m, t, p, ln, r, sp, i;
        int keyLen;
        long pepper = -1;

        static Fields rounds(String s) {
            Fields f = new Fields();
            f.i = number(s, "passlib", "rounds");
            return f;
        }

        static Fields parse(Scheme scheme, String list, String format) {
            Fields f = new Fields();
            Set<String> seen = new HashSet<>();
            for (String kv : list.split(",", -1)) {
                int eq = kv.indexOf('=');
                if (eq <= 0) {
                    throw bad(format, "a parameter is not k=v");
                }
                String k = kv.substring(0, eq), v = kv.substring(eq + 1);
                if (!seen.add(k)) {
                    throw bad(format, "a duplicate parameter");
                }
                if (k.equals("keyid")) {
                    f.pepper = keyId(v, format);
                } else if (k.equals("data")) {
                    throw new PasswordException.UnsupportedScheme("Argon2 associated data (data=)");
                } else {
                    f.set(scheme, k, number(v, format, k), format);
                }
            }
            List<String> required = switch (scheme.family()) {
                case ARGON2 -> List.of("m", "t", "p");
                case SCRYPT -> List.of("ln", "r", "p");
                case PBKDF2 -> List.of("i");
                case BCRYPT -> List.of();
            };
            for (String k : required) {
                if (!seen.contains(k)) {
                    throw bad(format, "missing parameter " + k);
                }
            }
            return f;
        }

        private void set(Scheme scheme, String k, long n, String format) {
            switch (scheme.family() + ":" + k) {
                case "ARGON2:m" -> m = n;
                case "ARGON2:t" -> t = n;
                case "ARGON2:p" -> p = cap(n, 255, format, k);
                case "SCRYPT:ln" -> ln = cap(n, 255, format, k);
                case "SCRYPT:r" -> r = cap(n, Integer.MAX_VALUE, format, k);
                case "SCRYPT:p" -> sp = cap(n, Integer.MAX_VALUE, format, k);
                case "PBKDF2:i" -> i = cap(n, Integer.MAX_VALUE, format, k);
                case "PBKDF2:l" -> keyLen = (int) cap(n, Integer.MAX_VALUE, format, k);
                default -> throw bad(format, "unknown parameter " + (k.length() > 16 ? k.substring(0, 16) : k));
            }
        }

        private static long cap(long n, long max, String format, String k) {
            if (n > max) {
                throw bad(format, k + ": out of range");
            }
            return n;
        }
    }

    private static long keyId(String v, String format) {
        byte[] b;
        try {
            b = B64.decode(v);
        } catch (IllegalArgumentException e) {
            throw bad(format, "keyid must be 4 bytes of base64");
        }
        if (b.length != 4 || v.contains("=")) {
            throw bad(format, "keyid must be 4 bytes of base64");
        }
        return ((b[0] & 0xffL) << 24) | ((b[1] & 0xffL) << 16) | ((b[2] & 0xffL) << 8) | (b[3] & 0xffL);
    }

    /** Decimal digits only, at most 10, within uint32. */
    static long number(String s, String format, String what) {
        if (s.isEmpty() || s.length() > 10 || !s.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw bad(format, what + ": not a number");
        }
        long n = Long.parseLong(s);
        if (n > 0xffffffffL) {
            throw bad(format, what + ": out of range");
        }
        return n;
    }

    static Decoded bcrypt(String s, String format, boolean prehash) {
        if (s.length() != 60) {
            throw bad(format, "bcrypt hashes are 60 characters");
        }
        if (s.charAt(0) != '$' || s.charAt(1) != '2' || s.charAt(3) != '$' || s.charAt(6) != '$') {
            throw bad(format, "not $2?$NN$…");
        }
        if ("aby".indexOf(s.charAt(2)) < 0) {
            throw new PasswordException.UnsupportedScheme("bcrypt variant $2" + s.charAt(2) + "$");
        }
        long cost = number(s.substring(4, 6), format, "cost");
        if (cost < 4 || cost > 31) {
            throw bad(format, "cost must be 04 to 31");
        }
        for (int i = 7; i < 60; i++) {
            if (BCRYPT_ALPHABET.indexOf(s.charAt(i)) < 0) {
                throw bad(format, "an invalid character in salt or hash");
            }
        }
        Params p = new Params(Scheme.BCRYPT, 0, 0, 0, (int) cost, 0, 0, 0, 0, 16, 23);
        return new Decoded(p, format, new byte[0], new byte[0], s, -1, prehash, false);
    }

    /** pbkdf2_sha256$iterations$salt$base64(hash): Django's salt is its literal bytes. */
    static Decoded djangoPBKDF2(String s) {
        String[] parts = s.split("\\$", -1);
        if (parts.length != 4) {
            throw bad("django", "want algorithm$iterations$salt$hash");
        }
        Scheme scheme = parts[0].equals("pbkdf2_sha1") ? Scheme.PBKDF2_SHA1 : Scheme.PBKDF2_SHA256;
        long n = number(parts[1], "django", "iterations");
        if (n < 1 || parts[2].isEmpty()) {
            throw bad("django", "iterations must be positive and the salt not empty");
        }
        byte[] hash;
        try {
            hash = B64.decode(parts[3]);
        } catch (IllegalArgumentException e) {
            throw bad("django", "hash is not valid base64");
        }
        byte[] salt = parts[2].getBytes(StandardCharsets.UTF_8);
        if (hash.length == 0) {
            throw bad("django", "an empty hash");
        }
        return new Decoded(new Params(scheme, 0, 0, 0, 0, 0, 0, 0, n, salt.length, hash.length), "django", salt, hash, null, -1, false, false);
    }

    /** Spring Security's DelegatingPasswordEncoder forms, {id} first. */
    static Decoded spring(String s) {
        int end = s.indexOf('}');
        if (end < 0 || end > 40) {
            throw bad("spring", "no {id} prefix");
        }
        String id = s.substring(1, end), rest = s.substring(end + 1);
        return switch (id) {
            case "bcrypt" -> bcrypt(rest, "spring-bcrypt", false);
            case "argon2", "argon2@SpringSecurity_v5_8" -> phc(rest, "spring-argon2");
            case "scrypt", "scrypt@SpringSecurity_v5_8" -> springScrypt(rest);
            case "pbkdf2" -> springPBKDF2(rest, Scheme.PBKDF2_SHA1, 8, 185_000);
            case "pbkdf2@SpringSecurity_v5_8" -> springPBKDF2(rest, Scheme.PBKDF2_SHA256, 16, 310_000);
            default -> throw new PasswordException.UnsupportedScheme("Spring encoder {" + (id.length() > 16 ? id.substring(0, 16) : id) + "}");
        };
    }

    private static Decoded springPBKDF2(String hex, Scheme scheme, int saltLen, long iterations) {
        byte[] raw;
        try {
            raw = HexFormat.of().parseHex(hex);
        } catch (IllegalArgumentException e) {
            throw bad("spring-pbkdf2", "not hex of salt and hash");
        }
        if (raw.length <= saltLen) {
            throw bad("spring-pbkdf2", "not hex of salt and hash");
        }
        byte[] salt = java.util.Arrays.copyOf(raw, saltLen), hash = java.util.Arrays.copyOfRange(raw, saltLen, raw.length);
        return new Decoded(new Params(scheme, 0, 0, 0, 0, 0, 0, 0, iterations, saltLen, hash.length), "spring-pbkdf2", salt, hash, null, -1, false, false);
    }

    /**
     * Whether s is SCryptPasswordEncoder's form without the {scrypt}
     * prefix (an application that used the encoder directly): hex digits,
     * one at least, where a PHC string names its scheme.
     */
    static boolean bareSpringScrypt(String s) {
        int end = s.indexOf('$', 1);
        if (!s.startsWith("$") || end < 2 || end > 9) {
            return false;
        }
        String id = s.substring(1, end);
        return id.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) && id.chars().anyMatch(c -> c >= '0' && c <= '9');
    }

    /** SCryptPasswordEncoder's $hex(log2N<<16 | r<<8 | p)$base64(salt)$base64(key). */
    private static Decoded springScrypt(String s) {
        String[] parts = s.split("\\$", -1);
        if (parts.length != 4 || !parts[0].isEmpty()) {
            throw bad("spring-scrypt", "want $params$salt$key");
        }
        long v;
        byte[] salt, key;
        try {
            v = Long.parseLong(parts[1], 16);
            salt = B64.decode(parts[2]);
            key = B64.decode(parts[3]);
        } catch (IllegalArgumentException e) {
            throw bad("spring-scrypt", "params are not hex, or salt or key not base64");
        }
        if (v < 0 || v > 0xffffffffL || (v >> 16) > 63 || salt.length == 0 || key.length == 0) {
            throw bad("spring-scrypt", "scrypt needs ln in 1..63 and a salt and key");
        }
        Params p = new Params(Scheme.SCRYPT, 0, 0, 0, 0, (int) (v >> 16), (int) (v >> 8 & 0xff), (int) (v & 0xff), 0, salt.length, key.length);
        return new Decoded(p, "spring-scrypt", salt, key, null, -1, false, false);
    }

    static PasswordException.Malformed bad(String format, String why) {
        return new PasswordException.Malformed(format + ": " + why);
    }
}
