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
        byte[] out = new byte[plaintext.length + TAG];
        sealInto(alg, key, nonce, plaintext, ad, out, 0);
        return out;
    }

    /** The AEADs' tag size in bytes. */
    static final int TAG = 16;

    /** Writes ciphertext ‖ tag of plaintext into out at off (plaintext.length + TAG bytes). */
    static void sealInto(Algorithm alg, byte[] key, byte[] nonce, byte[] plaintext, byte[] ad, byte[] out, int off) {
        if (alg == Algorithm.XCHACHA20_POLY1305) {
            xchacha(true, key, nonce, plaintext, 0, plaintext.length, ad, out, off);
            return;
        }
        try {
            gcm(Cipher.ENCRYPT_MODE, key, nonce, ad).doFinal(plaintext, 0, plaintext.length, out, off);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is not available: " + e.getClass().getSimpleName(), e);
        }
    }

    // Each thread keeps its own AES-GCM and AES-ECB cipher objects (not safe
    // to share; Cipher.getInstance looks the provider up again, which cost
    // several times a 500-byte seal) and re-initialises them per value.
    private static final ThreadLocal<Cipher> GCM = ThreadLocal.withInitial(() -> instance("AES/GCM/NoPadding"));
    private static final ThreadLocal<Cipher> ECB = ThreadLocal.withInitial(() -> instance("AES/ECB/NoPadding"));

    private static Cipher instance(String transformation) {
        try {
            return Cipher.getInstance(transformation);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(transformation + " is not available: " + e.getClass().getSimpleName(), e);
        }
    }

    /** This thread's AES-GCM cipher (128-bit tag) of key and nonce in mode, ad given. */
    private static Cipher gcm(int mode, byte[] key, byte[] nonce, byte[] ad) throws GeneralSecurityException {
        Cipher c = GCM.get();
        c.init(mode, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, nonce));
        c.updateAAD(ad);
        return c;
    }

    /** The plaintext of sealed (ciphertext ‖ tag), or {@link WardException.Authentication}. */
    static byte[] open(Algorithm alg, byte[] key, byte[] nonce, byte[] sealed, byte[] ad) {
        return open(alg, key, nonce, sealed, 0, sealed.length, ad);
    }

    /** The plaintext of in[off, off+len) (ciphertext ‖ tag), or {@link WardException.Authentication}. */
    static byte[] open(Algorithm alg, byte[] key, byte[] nonce, byte[] in, int off, int len, byte[] ad) {
        if (len < TAG) {
            throw new WardException.Authentication("the value failed authentication");
        }
        if (alg == Algorithm.XCHACHA20_POLY1305) {
            byte[] out = new byte[len - TAG];
            xchacha(false, key, nonce, in, off, len, ad, out, 0);
            return out;
        }
        try {
            return gcm(Cipher.DECRYPT_MODE, key, nonce, ad).doFinal(in, off, len);
        } catch (AEADBadTagException e) {
            throw new WardException.Authentication("the value failed authentication");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("AES-GCM is not available: " + e.getClass().getSimpleName(), e);
        }
    }

    private static void xchacha(boolean seal, byte[] key, byte[] nonce, byte[] in, int off, int len, byte[] ad, byte[] out, int outOff) {
        XChaCha20Poly1305 c = new XChaCha20Poly1305();
        c.init(seal, new AEADParameters(new KeyParameter(key), 128, nonce, ad));
        int n = c.processBytes(in, off, len, out, outOff);
        try {
            c.doFinal(out, outOff + n);
        } catch (InvalidCipherTextException e) {
            throw new WardException.Authentication("the value failed authentication");
        }
    }

    /** AES(key, block) of one 16-byte block. */
    static byte[] aesBlock(byte[] key, byte[] block) {
        try {
            Cipher c = ECB.get();
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
