package io.github.wardlab.ward.spring;

import io.github.wardlab.ward.KeyService;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.password.Params;
import io.github.wardlab.ward.password.Policy;
import java.nio.file.Path;
import java.util.Map;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.security.crypto.password.PasswordEncoder;

/**
 * Spring Boot auto-configuration: with this module on the class path, an
 * application that defines no {@link PasswordEncoder} of its own gets
 * {@link WardPasswordEncoder#delegating}: ward's Argon2id for new hashes,
 * every stored format verified and upgraded on log-in. {@code
 * ward.password.*} configures it ({@link WardPasswordProperties}).
 */
@AutoConfiguration
@ConditionalOnClass(PasswordEncoder.class)
@EnableConfigurationProperties(WardPasswordProperties.class)
public class WardPasswordAutoConfiguration {
    /** The application's password encoder, unless it defines one. */
    @Bean
    @ConditionalOnMissingBean(PasswordEncoder.class)
    public PasswordEncoder passwordEncoder(WardPasswordProperties props) {
        return WardPasswordEncoder.delegating(policy(props, System.getenv()));
    }

    /** The policy the properties describe; env is the process's environment. */
    static Policy policy(WardPasswordProperties props, Map<String, String> env) {
        Params preset = switch (props.getPreset()) {
            case "owasp" -> Params.owasp();
            case "strong" -> Params.strong();
            default -> throw new IllegalArgumentException("ward.password.preset: owasp or strong, not " + props.getPreset());
        };
        Policy p = Policy.defaults().withPreferred(preset, false);
        if (props.getKeyring() == null || props.getKeyring().isEmpty()) {
            if (props.isRequirePepper()) {
                throw new IllegalArgumentException("ward.password.require-pepper needs ward.password.keyring");
            }
            return p;
        }
        KeyService mk = MasterKey.resolve(props.getMasterKeyFile(), env);
        return p.withPepper(Keyring.load(Path.of(props.getKeyring()), mk), props.isRequirePepper());
    }
}
