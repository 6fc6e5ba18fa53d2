package io.github.wardlab.ward.password;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.bouncycastle.crypto.Digest;
import org.bouncycastle.crypto.digests.SHA1Digest;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.digests.SHA512Digest;
import org.bouncycastle.crypto.generators.Argon2BytesGenerator;
import org.bouncycastle.crypto.generators.HKDFBytesGenerator;
import org.bouncycastle.crypto.generators.OpenBSDBCrypt;
import org.bouncycastle.crypto.generators.PKCS5S2ParametersGenerator;
import org.bouncycastle.crypto.generators.SCrypt;
import org.bouncycastle.crypto.params.Argon2Parameters;
import org.bouncycastle.crypto.params.HKDFParameters;
import org.bouncycastle.crypto.params.KeyParameter;

/** The schemes' computations, all BouncyCastle's; nothing here is a primitive of its own. */
final class Compute {
    private Compute() {}

    /** The scheme's output for pw under d's salt and parameters (bcrypt: see bcryptMatches). */
    static byte[] run(Decoded d, byte[] pw, int keyLen) {
        Params p = d.params();
        return switch (p.scheme().family()) {
            case ARGON2 -> argon2(p, d.salt(), pw, keyLen);
            case SCRYPT -> SCrypt.generate(pw, d.salt(), 1 << p.logN(), p.r(), p.p(), keyLen);
            case PBKDF2 -> pbkdf2(p, d.salt(), pw, keyLen);
            case BCRYPT -> throw new IllegalStateException("bcrypt is compared by its library");
        };
    }

    private static byte[] argon2(Params p, byte[] salt, byte[] pw, int keyLen) {
        int type = switch (p.scheme()) {
            case ARGON2I -> Argon2Parameters.ARGON2_i;
            case ARGON2D -> Argon2Parameters.ARGON2_d;
            default -> Argon2Parameters.ARGON2_id;
        };
        Argon2Parameters params = new Argon2Parameters.Builder(type).withVersion(Argon2Parameters.ARGON2_VERSION_13)
                .withSalt(salt).withMemoryAsKB((int) p.memory()).withIterations((int) p.time()).withParallelism(p.parallelism()).build();
        Argon2BytesGenerator g = new Argon2BytesGenerator();
        g.init(params);
        byte[] out = new byte[keyLen];
        g.generateBytes(pw, out);
        return out;
    }

    private static byte[] pbkdf2(Params p, byte[] salt, byte[] pw, int keyLen) {
        Digest digest = switch (p.scheme()) {
            case PBKDF2_SHA1 -> new SHA1Digest();
            case PBKDF2_SHA512 -> new SHA512Digest();
            default -> new SHA256Digest();
        };
        PKCS5S2ParametersGenerator g = new PKCS5S2ParametersGenerator(digest);
        g.init(pw, salt, (int) p.iterations());
        return ((KeyParameter) g.generateDerivedParameters(keyLen * 8)).getKey();
    }

    /** Whether pw matches a bcrypt string (the library compares in constant time). */
    static boolean bcryptMatches(String bcrypt, byte[] pw) {
        return OpenBSDBCrypt.checkPassword(bcrypt, pw);
    }

    /** A new bcrypt string ($2b$) of pw at cost. */
    static String bcrypt(byte[] pw, byte[] salt, int cost) {
        return OpenBSDBCrypt.generate("2b", pw, salt, cost);
    }

    /** HKDF-SHA-256-Expand of a pseudorandom key (no extract). */
    static byte[] expand(byte[] prk, String info, int length) {
        HKDFBytesGenerator g = new HKDFBytesGenerator(new SHA256Digest());
        g.init(HKDFParameters.skipExtractParameters(prk, info.getBytes(StandardCharsets.US_ASCII)));
        byte[] out = new byte[length];
        g.generateBytes(out, 0, length);
        return out;
    }

    static void clear(byte[] b) {
        if (b != null) {
            Arrays.fill(b, (byte) 0);
        }
    }
}
