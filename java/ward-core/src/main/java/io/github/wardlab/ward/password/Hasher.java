package io.github.wardlab.ward.password;

import io.github.wardlab.ward.WardException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Hashes and verifies passwords under a {@link Policy}, as Go's
 * {@code password.Hasher}: it writes Argon2id PHC strings (OWASP's
 * parameters by default, peppered with a keyring key if the policy says
 * so) and verifies every format the Go library verifies, each stored hash's
 * parameters checked against the limits before any work. Safe for
 * concurrent use.
 */
public final class Hasher {
    /** The keyring derivation that peppers passwords. */
    public static final String PEPPER_PURPOSE = "password-pepper";

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Base64.Encoder B64 = Base64.getEncoder().withoutPadding();

    private final Policy policy;

    /** What verify learned besides the match. */
    public record Result(boolean matched, boolean needsRehash, Params params, String format) {}

    /** A hasher of policy; refuses weak or unwritable preferred parameters unless allowed. */
    public Hasher(Policy policy) {
        Params p = policy.preferred();
        if (!p.scheme().writable()) {
            throw new PasswordException.UnsupportedScheme(p.scheme().id() + " is accepted for verification only");
        }
        if (!policy.allowWeak()) {
            String weak = weakness(p);
            if (weak != null) {
                throw new PasswordException.WeakParams(weak + " (" + p + ")");
            }
        }
        if (policy.requirePepper() && policy.pepper() == null) {
            throw new PasswordException.Pepper("requirePepper needs a pepper keyring");
        }
        if (policy.pepper() != null && p.scheme() == Scheme.BCRYPT) {
            throw new PasswordException.Pepper("bcrypt hashes cannot record a pepper key; prefer Argon2id");
        }
        policy.limits().check(p.scheme() == Scheme.BCRYPT ? p.withLengths(16, 23) : p);
        this.policy = policy;
    }

    /** Why p is below OWASP's minimums for writing, or null. */
    static String weakness(Params p) {
        if (p.saltLen() < 16 || (p.scheme() != Scheme.BCRYPT && p.keyLen() < 16)) {
            return "salt or output shorter than 16 bytes";
        }
        return switch (p.scheme().family()) {
            case ARGON2 -> p.memory() < 7168 || p.memory() * p.time() < 7168L * 5 ? "Argon2 memory x time below OWASP's minimum (m=7168 KiB, t=5)" : null;
            case BCRYPT -> p.cost() < 10 ? "bcrypt cost below 10" : null;
            case SCRYPT -> p.logN() < 15 ? "scrypt N below 2^15" : null;
            case PBKDF2 -> p.iterations() < 600_000 ? "pbkdf2-sha256 below 600000 iterations" : null;
        };
    }

    private byte[] checked(CharSequence password) {
        if (password == null || password.length() == 0) {
            throw new PasswordException.BadPassword("an empty password");
        }
        byte[] pw = password.toString().getBytes(StandardCharsets.UTF_8);
        if (pw.length > policy.limits().maxPasswordLen()) {
            Compute.clear(pw);
            throw new PasswordException.BadPassword("a password longer than " + policy.limits().maxPasswordLen() + " bytes");
        }
        return pw;
    }

    /** The encoded hash of password under the preferred parameters, with a fresh salt. */
    public String hash(CharSequence password) {
        Params p = policy.preferred();
        byte[] pw = checked(password);
        try {
            byte[] salt = new byte[p.saltLen()];
            RANDOM.nextBytes(salt);
            if (p.scheme() == Scheme.BCRYPT) {
                if (pw.length > 72) {
                    throw new PasswordException.BadPassword("bcrypt uses only the first 72 bytes");
                }
                return Compute.bcrypt(pw, salt, p.cost());
            }
            long pepper = -1;
            if (policy.pepper() != null) {
                pepper = policy.pepper().primary().id();
                byte[] peppered = pepper(pepper, pw);
                Compute.clear(pw);
                pw = peppered;
            }
            Decoded d = new Decoded(p, "phc", salt, null, null, pepper, false, false);
            return encode(p, pepper, salt, Compute.run(d, pw, p.keyLen()));
        } finally {
            Compute.clear(pw);
        }
    }

    static String encode(Params p, long pepper, byte[] salt, byte[] hash) {
        String params = switch (p.scheme().family()) {
            case ARGON2 -> String.format("v=19$m=%d,t=%d,p=%d", p.memory(), p.time(), p.parallelism());
            case SCRYPT -> String.format("ln=%d,r=%d,p=%d", p.logN(), p.r(), p.p());
            case PBKDF2 -> String.format("i=%d,l=%d", p.iterations(), p.keyLen());
            case BCRYPT -> throw new IllegalStateException("bcrypt has its own format");
        };
        if (pepper >= 0) {
            byte[] id = {(byte) (pepper >>> 24), (byte) (pepper >>> 16), (byte) (pepper >>> 8), (byte) pepper};
            params += ",keyid=" + B64.encodeToString(id);
        }
        return "$" + p.scheme().id() + "$" + params + "$" + B64.encodeToString(salt) + "$" + B64.encodeToString(hash);
    }

    /**
     * Checks password against an encoded hash in any supported format: a
     * result saying whether it matched and whether the hash needs a rehash
     * under the policy, or a {@link PasswordException} when the hash cannot
     * be checked (malformed, unsupported, over the limits, pepper). The
     * output is compared in constant time.
     */
    public Result verify(CharSequence password, String encoded) {
        Decoded d = Decoder.decode(encoded);
        policy.limits().check(d.params());
        byte[] pw = input(d, checked(password));
        try {
            boolean ok;
            if (d.params().scheme() == Scheme.BCRYPT) {
                ok = Compute.bcryptMatches(d.bcrypt(), pw);
            } else if (d.kek()) {
                ok = keyBearing(d, pw);
            } else {
                byte[] out = Compute.run(d, pw, d.params().keyLen());
                ok = MessageDigest.isEqual(out, d.hash());
                Compute.clear(out);
            }
            return new Result(ok, ok && needsRehash(d), d.params(), d.format());
        } finally {
            Compute.clear(pw);
        }
    }

    /**
     * Whether a stored hash needs a rehash under the policy (computes
     * nothing); a hash that cannot be checked throws, as verify does.
     */
    public boolean needsRehash(String encoded) {
        Decoded d = Decoder.decode(encoded);
        policy.limits().check(d.params());
        return needsRehash(d);
    }

    private boolean needsRehash(Decoded d) {
        Params want = policy.preferred();
        Params have = d.params();
        if (have.scheme() == Scheme.BCRYPT && want.scheme() == Scheme.BCRYPT) {
            have = have.withLengths(want.saltLen(), want.keyLen());
        }
        if (have.weakerThan(want)) {
            return true;
        }
        return policy.pepper() != null && d.pepper() != policy.pepper().primary().id();
    }

    /** The format's pre-hash and the pepper applied to pw (which it clears). */
    private byte[] input(Decoded d, byte[] pw) {
        if (d.sha256Prehash()) {
            byte[] pre = HexFormat.of().formatHex(sha256(pw)).getBytes(StandardCharsets.US_ASCII);
            Compute.clear(pw);
            pw = pre;
        }
        if (d.pepper() < 0 && policy.requirePepper()) {
            Compute.clear(pw);
            throw new PasswordException.Pepper("the hash is not peppered and the policy requires a pepper");
        }
        if (d.pepper() >= 0) {
            if (policy.pepper() == null) {
                Compute.clear(pw);
                throw new PasswordException.Pepper(String.format("the hash is peppered with key %08x and the policy has no pepper keyring", d.pepper()));
            }
            byte[] peppered = pepper(d.pepper(), pw);
            Compute.clear(pw);
            pw = peppered;
        }
        if (d.params().scheme() == Scheme.BCRYPT && pw.length > 72) {
            if (!policy.bcryptTruncate()) {
                Compute.clear(pw);
                throw new PasswordException.BadPassword("bcrypt would use only the first 72 bytes (set bcryptTruncate for legacy hashes)");
            }
            byte[] cut = Arrays.copyOf(pw, 72);
            Compute.clear(pw);
            pw = cut;
        }
        return pw;
    }

    /** base64(HMAC-SHA-256(K, pw)), K derived from the keyring key id. */
    private byte[] pepper(long id, byte[] pw) {
        byte[] k;
        try {
            k = policy.pepper().deriveFromKey(id, PEPPER_PURPOSE, 32);
        } catch (WardException e) {
            throw new PasswordException.Pepper("the pepper key: " + e.getMessage());
        }
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(k, "HmacSHA256"));
            byte[] sum = m.doFinal(pw);
            byte[] out = B64.encode(sum);
            Compute.clear(sum);
            return out;
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException("HMAC-SHA-256 is not available", e);
        } finally {
            Compute.clear(k);
        }
    }

    /** A key-bearing hash: the first 32 bytes of its 64 are the verifier. */
    private boolean keyBearing(Decoded d, byte[] pw) {
        byte[] verifier;
        if (d.params().scheme() == Scheme.PBKDF2_SHA256) {
            byte[] m = Compute.run(d, pw, 32);
            verifier = Compute.expand(m, "ward pbkdf2 kek verifier v1", 32);
            Compute.clear(m);
        } else {
            byte[] full = Compute.run(d, pw, 64);
            verifier = Arrays.copyOf(full, 32);
            Compute.clear(full);
        }
        boolean ok = MessageDigest.isEqual(verifier, d.hash());
        Compute.clear(verifier);
        return ok;
    }

    private static byte[] sha256(byte[] b) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(b);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The policy. */
    public Policy policy() {
        return policy;
    }
}
