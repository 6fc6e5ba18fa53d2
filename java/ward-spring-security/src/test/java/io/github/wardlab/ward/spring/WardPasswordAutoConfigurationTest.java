package io.github.wardlab.ward.spring;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.crypto.bcrypt.BCryptPasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;

/** The auto-configuration: ward's encoder by default, the application's own if it has one. */
class WardPasswordAutoConfigurationTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(WardPasswordAutoConfiguration.class));

    @Test
    void providesWardsEncoder() {
        runner.run(ctx -> {
            PasswordEncoder pe = ctx.getBean(PasswordEncoder.class);
            String hash = pe.encode("pw");
            assertThat(hash).startsWith("{ward}$argon2id$v=19$m=19456,t=2,p=1$");
            assertThat(pe.matches("pw", hash)).isTrue();
        });
    }

    @Test
    void strongPreset() {
        runner.withPropertyValues("ward.password.preset=strong")
                .run(ctx -> assertThat(ctx.getBean(PasswordEncoder.class).encode("pw")).startsWith("{ward}$argon2id$v=19$m=65536,t=3,p=4$"));
    }

    @Test
    void badSettingsFailTheStart() {
        runner.withPropertyValues("ward.password.preset=md5").run(ctx -> assertThat(ctx).hasFailed());
        runner.withPropertyValues("ward.password.require-pepper=true").run(ctx -> assertThat(ctx).hasFailed());
    }

    @Test
    void backsOffForTheApplicationsOwn() {
        runner.withUserConfiguration(Own.class)
                .run(ctx -> assertThat(ctx.getBean(PasswordEncoder.class)).isInstanceOf(BCryptPasswordEncoder.class));
    }

    @Configuration
    static class Own {
        @Bean
        PasswordEncoder passwordEncoder() {
            return new BCryptPasswordEncoder();
        }
    }
}
