package io.github.wardlab.ward.bench;

import io.github.wardlab.ward.password.Params;
import io.github.wardlab.ward.password.Policy;
import io.github.wardlab.ward.spring.WardPasswordEncoder;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.springframework.security.crypto.argon2.Argon2PasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;

/**
 * Spring Security's Argon2PasswordEncoder at its v5.8 defaults (Argon2id,
 * m=16384 KiB, t=2, p=1: the field report's encoder) beside ward-java's
 * WardPasswordEncoder at the same parameters and at ward's default preset
 * (m=19456 KiB, t=2, p=1), and the log-in of a user whose hash Spring wrote.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class PasswordBench {
    static final String PASSWORD = "correct horse battery staple";

    private PasswordEncoder spring, wardSame, ward;
    private String springHash;

    /** The encoders, and a hash Spring wrote. */
    @Setup
    public void setup() {
        spring = Argon2PasswordEncoder.defaultsForSpringSecurity_v5_8();
        wardSame = new WardPasswordEncoder(Policy.defaults().withPreferred(Params.springV58(), true));
        ward = new WardPasswordEncoder();
        springHash = spring.encode(PASSWORD);
        if (!ward.matches(PASSWORD, springHash) || !spring.matches(PASSWORD, wardSame.encode(PASSWORD))) {
            throw new IllegalStateException("the encoders do not read each other's hashes");
        }
    }

    /** Spring's encoder, v5.8 defaults. */
    @Benchmark
    public String springEncode() {
        return spring.encode(PASSWORD);
    }

    /** ward-java's encoder at Spring's v5.8 parameters. */
    @Benchmark
    public String wardEncodeSpringParams() {
        return wardSame.encode(PASSWORD);
    }

    /** ward-java's encoder at its default preset (OWASP's). */
    @Benchmark
    public String wardEncode() {
        return ward.encode(PASSWORD);
    }

    /** A log-in on a hash Spring wrote: ward-java's matches and upgradeEncoding. */
    @Benchmark
    public boolean wardLoginOnSpringHash() {
        return ward.matches(PASSWORD, springHash) && ward.upgradeEncoding(springHash);
    }
}
