package io.github.wardlab.ward.spring;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.wardlab.ward.password.Params;
import io.github.wardlab.ward.password.Policy;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.security.crypto.argon2.Argon2PasswordEncoder;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.security.crypto.factory.PasswordEncoderFactories;
import org.springframework.security.crypto.password.DelegatingPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.crypto.password.Pbkdf2PasswordEncoder;
import org.springframework.security.crypto.scrypt.SCryptPasswordEncoder;

/**
 * Spring Security's own encoders beside ward's: what each Spring encoder
 * writes verifies with ward's, what ward writes verifies with Spring's
 * Argon2 and delegating encoders, and upgradeEncoding asks for ward's
 * parameters.
 */
class WardPasswordEncoderTest {
    static final String PW = "correct horse battery staple";

    @Test
    @SuppressWarnings("deprecation") // the v5.2 preset: stored hashes of older applications
    void springsHashesVerify() {
        WardPasswordEncoder ward = new WardPasswordEncoder();
        List<PasswordEncoder> spring = List.of(Argon2PasswordEncoder.defaultsForSpringSecurity_v5_8(), Argon2PasswordEncoder.defaultsForSpringSecurity_v5_2(),
                new BCryptPasswordEncoder(), new BCryptPasswordEncoder(BCryptPasswordEncoder.BCryptVersion.$2B, 10),
                SCryptPasswordEncoder.defaultsForSpringSecurity_v5_8(), PasswordEncoderFactories.createDelegatingPasswordEncoder());
        for (PasswordEncoder s : spring) {
            String hash = s.encode(PW);
            assertTrue(ward.matches(PW, hash), s.getClass().getSimpleName() + ": " + hash);
            assertFalse(ward.matches(PW + "!", hash), s.getClass().getSimpleName());
        }
        // Every one of them below ward's Argon2id at OWASP's parameters: upgraded on log-in.
        for (PasswordEncoder s : spring) {
            assertTrue(ward.upgradeEncoding(s.encode(PW)), s.getClass().getSimpleName());
        }
    }

    /**
     * Pbkdf2PasswordEncoder used on its own writes bare hex, which names
     * neither its hash nor its parameters: it verifies once given the
     * {id} DelegatingPasswordEncoder would have written.
     */
    @Test
    void bareSpringPBKDF2NeedsItsId() {
        WardPasswordEncoder ward = new WardPasswordEncoder();
        String bare = Pbkdf2PasswordEncoder.defaultsForSpringSecurity_v5_8().encode(PW);
        assertFalse(ward.matches(PW, bare));
        assertTrue(ward.matches(PW, "{pbkdf2@SpringSecurity_v5_8}" + bare));
    }

    @Test
    void wardsHashesVerifyWithSpring() {
        WardPasswordEncoder ward = new WardPasswordEncoder();
        String hash = ward.encode(PW);
        assertTrue(hash.startsWith("$argon2id$v=19$m=19456,t=2,p=1$"), hash);
        assertTrue(Argon2PasswordEncoder.defaultsForSpringSecurity_v5_8().matches(PW, hash));
        assertTrue(PasswordEncoderFactories.createDelegatingPasswordEncoder().matches(PW, "{argon2}" + hash));
        assertFalse(ward.upgradeEncoding(hash));
        assertTrue(new WardPasswordEncoder(Policy.defaults().withPreferred(Params.strong(), false)).upgradeEncoding(hash));
    }

    @Test
    void delegatingWritesWardAndReadsEverything() {
        DelegatingPasswordEncoder d = WardPasswordEncoder.delegating(Policy.defaults());
        String hash = d.encode(PW);
        assertTrue(hash.startsWith("{ward}$argon2id$"), hash);
        assertTrue(d.matches(PW, hash));
        assertFalse(d.upgradeEncoding(hash));
        String legacy = PasswordEncoderFactories.createDelegatingPasswordEncoder().encode(PW); // {bcrypt}…
        assertTrue(d.matches(PW, legacy), legacy);
        assertTrue(d.upgradeEncoding(legacy));
        String bare = new BCryptPasswordEncoder().encode(PW); // no {id}: an older Spring application's
        assertTrue(d.matches(PW, bare));
        assertTrue(d.upgradeEncoding(bare));
    }

    @Test
    void whatCannotBeCheckedDoesNotMatch() {
        WardPasswordEncoder ward = new WardPasswordEncoder();
        for (String bad : new String[] {"", "garbage", "{md5}abc", "$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHRzYWx0MTIzNA$c2FsdHNhbHRzYWx0MTIzNA"}) {
            assertFalse(ward.matches(PW, bad), bad);
            assertFalse(ward.upgradeEncoding(bad), bad);
        }
        assertFalse(ward.matches("", ward.encode(PW)));
    }
}
