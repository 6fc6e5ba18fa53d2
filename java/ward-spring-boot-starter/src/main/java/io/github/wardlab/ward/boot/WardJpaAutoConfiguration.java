package io.github.wardlab.ward.boot;

import io.github.wardlab.ward.KeyService;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.hibernate.WardHibernate;
import io.github.wardlab.ward.hibernate.WardIntegrator;
import java.nio.file.Path;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.hibernate.autoconfigure.HibernatePropertiesCustomizer;
import org.springframework.context.annotation.Bean;

/**
 * Spring Boot auto-configuration of ward's sealed JPA columns: with
 * {@code ward.keyring} set, the keyring is opened at start (a missing
 * file, another master key or a damaged file fails the start, naming the
 * fault but never a key) and handed to ward's Hibernate integration
 * ({@link WardIntegrator}, which Hibernate loads itself), so every
 * {@code @Sealed} attribute is sealed on write, bound to its row, and
 * opened on load.
 */
@AutoConfiguration
@ConditionalOnClass({WardIntegrator.class, HibernatePropertiesCustomizer.class})
@ConditionalOnProperty("ward.keyring")
@EnableConfigurationProperties(WardProperties.class)
public class WardJpaAutoConfiguration {
    /** The auto-configuration Spring Boot instantiates. */
    public WardJpaAutoConfiguration() {}

    /** The keyring of {@code ward.keyring}, unless the application defines its own. */
    @Bean
    @ConditionalOnMissingBean(Keyring.class)
    public Keyring wardKeyring(WardProperties props) {
        return keyring(props, System.getenv(MasterKey.ENV));
    }

    /** Puts the keyring where ward's Hibernate integration reads it. */
    @Bean
    public HibernatePropertiesCustomizer wardHibernateProperties(Keyring keyring) {
        return properties -> properties.put(WardHibernate.KEYRING, keyring);
    }

    /** The keyring the properties name; env is WARD_MASTER_KEY's value. */
    static Keyring keyring(WardProperties props, String env) {
        KeyService mk;
        if (props.getMasterKeyFile() != null && !props.getMasterKeyFile().isEmpty()) {
            mk = MasterKey.load(Path.of(props.getMasterKeyFile()));
        } else if (env != null && !env.isEmpty()) {
            mk = MasterKey.parse(env);
        } else {
            throw new IllegalStateException("ward.keyring needs a master key: ward.master-key-file, or " + MasterKey.ENV);
        }
        return Keyring.load(Path.of(props.getKeyring()), mk);
    }
}
