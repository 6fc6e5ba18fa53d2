package io.github.wardlab.ward.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.WardException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
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

    /** ward.password.keyring peppers new hashes; its master key is the file's, else WARD_MASTER_KEY. */
    @Test
    void peppersWithTheNamedKeyring(@TempDir Path dir) throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonNode file = json.readTree(Path.of("..", "..", "field", "testdata", "context-v4.json").toFile());
        Path kr = Files.write(dir.resolve("keyring.json"), json.writeValueAsBytes(file.get("keyring")));
        Path mk = Files.writeString(dir.resolve("master.key"), file.get("master_key").asText());
        runner.withPropertyValues("ward.password.keyring=" + kr, "ward.password.master-key-file=" + mk, "ward.password.require-pepper=true")
                .run(ctx -> {
                    PasswordEncoder pe = ctx.getBean(PasswordEncoder.class);
                    String hash = pe.encode("pw");
                    assertThat(hash).contains(",keyid=");
                    assertThat(pe.matches("pw", hash)).isTrue();
                });
        WardPasswordProperties p = new WardPasswordProperties();
        p.setKeyring(kr.toString());
        assertThatThrownBy(() -> WardPasswordAutoConfiguration.policy(p, Map.of())).isInstanceOf(WardException.class)
                .hasMessageContaining(MasterKey.ENV);
        assertThat(WardPasswordAutoConfiguration.policy(p, Map.of(MasterKey.ENV, Files.readString(mk))).pepper()).isNotNull();
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
