package io.github.wardlab.ward.bench;

import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * The floor a JVM service has for one value: the JDK's AES-256-GCM
 * ({@code AES/GCM/NoPadding}) with a fresh 12-byte IV from SecureRandom,
 * the value carrying its IV (IV ‖ ciphertext ‖ tag), as the Go lab's raw
 * case does. Both of the lab's JVM harnesses measure ward-java against it:
 * {@link FieldBench} under JMH and the lab's interleaved WardJavaBench.
 * Not safe for concurrent use: a benchmark thread holds its own.
 */
public final class JdkAesGcm {
    private final SecureRandom random = new SecureRandom();
    private final SecretKeySpec key;
    private final Cipher enc, dec;

    /** A fresh random key and the JDK's ciphers for it. */
    public JdkAesGcm() throws GeneralSecurityException {
        byte[] k = new byte[32];
        random.nextBytes(k);
        key = new SecretKeySpec(k, "AES");
        enc = Cipher.getInstance("AES/GCM/NoPadding");
        dec = Cipher.getInstance("AES/GCM/NoPadding");
    }

    /** IV ‖ ciphertext ‖ tag of plaintext under a fresh IV. */
    public byte[] seal(byte[] plaintext) throws GeneralSecurityException {
        byte[] iv = new byte[12];
        random.nextBytes(iv);
        byte[] out = new byte[12 + plaintext.length + 16];
        System.arraycopy(iv, 0, out, 0, 12);
        enc.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(128, iv));
        enc.doFinal(plaintext, 0, plaintext.length, out, 12);
        return out;
    }

    /** The plaintext of what {@link #seal} returned: the IV read from the value, then decrypted and checked. */
    public byte[] open(byte[] stored) throws GeneralSecurityException {
        dec.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(128, stored, 0, 12));
        return dec.doFinal(stored, 12, stored.length - 12);
    }
}
