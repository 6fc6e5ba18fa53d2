package io.github.wardlab.ward;

import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.zip.CRC32C;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;
import org.bouncycastle.crypto.InvalidCipherTextException;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.generators.HKDFBytesGenerator;
import org.bouncycastle.crypto.modes.XChaCha20Poly1305;
import org.bouncycastle.crypto.params.AEADParameters;
import org.bouncycastle.crypto.params.HKDFParameters;
import org.bouncycastle.crypto.params.KeyParameter;

/**
 * The AEADs and derivations ward's formats use: AES-GCM and AES from the
 * JDK, HKDF-SHA-256 and XChaCha20-Poly1305 from BouncyCastle, CRC-32C from
 * the JDK. Nothing here is a primitive of its own.
 */
final class Crypto {
    private Crypto() {}

    private static final SecureRandom RANDOM = new SecureRandom();

    /** HKDF-SHA-256 (RFC 5869); a null salt is no salt. */
    static byte[] hkdf(byte[] ikm, byte[] salt, byte[] info, int length) {
        HKDFBytesGenerator g = new HKDFBytesGenerator(new SHA256Digest());
        g.init(new HKDFParameters(ikm, salt, info));
        byte[] out = new byte[length];
        g.generateBytes(out, 0, length);
        return out;
    }

    /** A fresh random nonce (or key) of n bytes. */
    static byte[] random(int n) {
        byte[] b = new byte[n];
        RANDOM.nextBytes(b);
        return b;
    }

    /** ciphertext ‖ tag of plaintext under key and nonce, bound to ad. */
    static byte[] seal(Algorithm alg, byte[] key, byte[] nonce, byte[] plaintext, byte[] ad) {
        if (alg == Algorithm.XCHACHA20_POLY1305) {
            return xchacha(true, key, nonce, plaintext, ad);
        }
        try {
            return gcm(Cipher.ENCRYPT_MODE, key, nonce, ad).doFinal(plaintext);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is not available: " + e.getClass().getSimpleName(), e);
        }
    }

    /** An AES-GCM cipher (128-bit tag) of key and nonce in mode, ad given. */
    private static Cipher gcm(int mode, byte[] key, byte[] nonce, byte[] ad) throws GeneralSecurityException {
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        c.init(mode, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, nonce));
        c.updateAAD(ad);
        return c;
    }

    /** The plaintext of sealed (ciphertext ‖ tag), or {@link WardException.Authentication}. */
    static byte[] open(Algorithm alg, byte[] key, byte[] nonce, byte[] sealed, byte[] ad) {
        if (alg == Algorithm.XCHACHA20_POLY1305) {
            return xchacha(false, key, nonce, sealed, ad);
        }
        try {
            return gcm(Cipher.DECRYPT_MODE, key, nonce, ad).doFinal(sealed);
        } catch (AEADBadTagException e) {
            throw new WardException.Authentication("the value failed authentication");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is not available: " + e.getClass().getSimpleName(), e);
        }
    }

    private static byte[] xchacha(boolean seal, byte[] key, byte[] nonce, byte[] in, byte[] ad) {
        XChaCha20Poly1305 c = new XChaCha20Poly1305();
        c.init(seal, new AEADParameters(new KeyParameter(key), 128, nonce, ad));
        byte[] out = new byte[c.getOutputSize(in.length)];
        int n = c.processBytes(in, 0, in.length, out, 0);
        try {
            n += c.doFinal(out, n);
        } catch (InvalidCipherTextException e) {
            throw new WardException.Authentication("the value failed authentication");
        }
        return n == out.length ? out : java.util.Arrays.copyOf(out, n);
    }

    /** AES(key, block) of one 16-byte block. */
    static byte[] aesBlock(byte[] key, byte[] block) {
        try {
            Cipher c = Cipher.getInstance("AES/ECB/NoPadding");
            c.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"));
            return c.doFinal(block);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES is not available: " + e.getClass().getSimpleName(), e);
        }
    }

    /** CRC-32C (Castagnoli) of data. */
    static long crc32c(byte[] data) {
        CRC32C c = new CRC32C();
        c.update(data);
        return c.getValue();
    }
}
