package io.github.wardlab.ward.boot.demo;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.security.authentication.AuthenticationManager;
import org.springframework.security.authentication.ProviderManager;
import org.springframework.security.authentication.dao.DaoAuthenticationProvider;
import org.springframework.security.crypto.password.PasswordEncoder;

/**
 * The demo service: chat messages in a JPA entity whose body is sealed
 * ({@link Message}), users logging in through Spring Security's
 * {@code DaoAuthenticationProvider}. It configures nothing of ward's: the
 * starter's auto-configuration supplies the {@code PasswordEncoder} and
 * hands the keyring to Hibernate.
 */
@SpringBootApplication
public class DemoApplication {
    /** Log-in as a Spring service does it: users from the database, hashes upgraded on success. */
    @Bean
    AuthenticationManager authenticationManager(Accounts accounts, PasswordEncoder encoder) {
        DaoAuthenticationProvider p = new DaoAuthenticationProvider(accounts);
        p.setPasswordEncoder(encoder);
        p.setUserDetailsPasswordService(accounts);
        return new ProviderManager(p);
    }
}
