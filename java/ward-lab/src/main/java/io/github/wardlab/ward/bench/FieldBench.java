package io.github.wardlab.ward.bench;

import io.github.wardlab.ward.Column;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * ward-java's seal and open of one column value (ciphertext v4 of
 * {@code messages.body}, bound to its row, under the keyring's primary)
 * beside the JDK's own AES-GCM on a value that carries its IV (a fresh
 * 12-byte IV from SecureRandom), the floor a JVM service has. The keyring
 * and its master key are files: {@code -p keyring=PATH -p masterKey=PATH}
 * (the lab makes a fresh one).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class FieldBench {
    /** The value's size in bytes. */
    @Param({"64", "500", "16384"})
    public int size;

    /** The keyring file. */
    @Param("")
    public String keyring;

    /** The keyring's master key file. */
    @Param("")
    public String masterKey;

    private Column column;
    private byte[] plaintext, sealed, rawSealed;
    private final SecureRandom random = new SecureRandom();
    private JdkAesGcm raw;

    /** Opens the keyring, seals one value each way and checks both open. */
    @Setup
    public void setup() throws GeneralSecurityException {
        if (keyring.isEmpty() || masterKey.isEmpty()) {
            throw new IllegalArgumentException("pass -p keyring=PATH -p masterKey=PATH");
        }
        Keyring kr = Keyring.load(Path.of(keyring), MasterKey.load(Path.of(masterKey)));
        column = new Column(kr, "messages", "body");
        plaintext = new byte[size];
        random.nextBytes(plaintext);
        sealed = column.seal(plaintext, 123456L);
        raw = new JdkAesGcm();
        rawSealed = rawSeal();
        if (!Arrays.equals(column.open(sealed, 123456L), plaintext) || !Arrays.equals(rawOpen(), plaintext)) {
            throw new IllegalStateException("a value did not open to what was sealed");
        }
    }

    /** JDK AES-256-GCM: IV ‖ ciphertext ‖ tag. */
    @Benchmark
    public byte[] rawSeal() throws GeneralSecurityException {
        return raw.seal(plaintext);
    }

    /** JDK AES-256-GCM: the IV read from the value, then decrypted and checked. */
    @Benchmark
    public byte[] rawOpen() throws GeneralSecurityException {
        return raw.open(rawSealed);
    }

    /** ward-java: Column.seal, ciphertext v4 bound to row 123456. */
    @Benchmark
    public byte[] wardSeal() {
        return column.seal(plaintext, 123456L);
    }

    /** ward-java: Column.open of a v4 value of row 123456. */
    @Benchmark
    public byte[] wardOpen() {
        return column.open(sealed, 123456L);
    }
}
