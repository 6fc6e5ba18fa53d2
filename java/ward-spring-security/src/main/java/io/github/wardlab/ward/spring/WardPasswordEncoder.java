package io.github.wardlab.ward.spring;

import io.github.wardlab.ward.password.Hasher;
import io.github.wardlab.ward.password.PasswordException;
import io.github.wardlab.ward.password.Policy;
import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.Map;
import org.springframework.security.crypto.password.DelegatingPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;

/**
 * Spring Security's {@link PasswordEncoder} on ward's password hasher: it
 * writes ward's Argon2id PHC strings (OWASP's parameters by default, the
 * pepper and limits of its {@link Policy}), verifies every format ward
 * verifies — Spring's own encoders' outputs and their {@code {id}} forms
 * included — and answers {@link #upgradeEncoding} as ward's needs-rehash
 * does, so that Spring's {@code DaoAuthenticationProvider} re-hashes on
 * log-in.
 *
 * <p>A hash it cannot check (malformed, of a scheme it does not verify, over
 * its limits, or needing a pepper it lacks) does not match, and is logged
 * as a warning without the hash or the password, as Spring's own encoders
 * do.
 */
public final class WardPasswordEncoder implements PasswordEncoder {
    /** The id {@link #delegating} writes new hashes under: {@code {ward}$argon2id$…}. */
    public static final String ID = "ward";

    private static final Logger LOG = System.getLogger(WardPasswordEncoder.class.getName());

    private final Hasher hasher;

    /** An encoder of ward's default policy (Argon2id, m=19456 KiB, t=2, p=1). */
    public WardPasswordEncoder() {
        this(Policy.defaults());
    }

    /** An encoder of policy. */
    public WardPasswordEncoder(Policy policy) {
        this.hasher = new Hasher(policy);
    }

    /**
     * A {@link DelegatingPasswordEncoder} for an application that already
     * stores hashes: new hashes are written as {@code {ward}} and this
     * encoder's format, and every stored hash — ward's, Spring's
     * {@code {bcrypt}}, {@code {argon2}}, {@code {scrypt}}, {@code {pbkdf2}}
     * forms, and unprefixed PHC, bcrypt, passlib or Django strings — is
     * verified by this encoder, which also says when each needs a rehash.
     */
    public static DelegatingPasswordEncoder delegating(Policy policy) {
        WardPasswordEncoder ward = new WardPasswordEncoder(policy);
        DelegatingPasswordEncoder d = new DelegatingPasswordEncoder(ID, Map.of(ID, ward));
        d.setDefaultPasswordEncoderForMatches(ward);
        return d;
    }

    @Override
    public String encode(CharSequence rawPassword) {
        return hasher.hash(rawPassword);
    }

    @Override
    public boolean matches(CharSequence rawPassword, String encodedPassword) {
        if (rawPassword == null || rawPassword.length() == 0 || encodedPassword == null || encodedPassword.isEmpty()) {
            return false;
        }
        try {
            return hasher.verify(rawPassword, encodedPassword).matched();
        } catch (PasswordException e) {
            LOG.log(Level.WARNING, "ward: a stored password hash could not be checked: {0}: {1}", e.getClass().getSimpleName(), e.getMessage());
            return false;
        }
    }

    @Override
    public boolean upgradeEncoding(String encodedPassword) {
        if (encodedPassword == null || encodedPassword.isEmpty()) {
            return false;
        }
        try {
            return hasher.needsRehash(encodedPassword);
        } catch (PasswordException e) {
            return false;
        }
    }
}
