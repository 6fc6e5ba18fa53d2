package io.github.wardlab.ward.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.WardException;
import io.github.wardlab.ward.hibernate.WardHibernate;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.hibernate.autoconfigure.HibernatePropertiesCustomizer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The sealing auto-configuration: on with ward.keyring, the keyring opened at start or the start failing. */
class WardJpaAutoConfigurationTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(WardJpaAutoConfiguration.class));

    /** A master key of 32 random bytes, not the keyring's. */
    static String otherKey() {
        byte[] k = new byte[32];
        new java.security.SecureRandom().nextBytes(k);
        return java.util.Base64.getEncoder().encodeToString(k);
    }

    @Test
    void offWithoutAKeyring() {
        runner.run(ctx -> {
            assertThat(ctx).hasNotFailed();
            assertThat(ctx).doesNotHaveBean(Keyring.class);
            assertThat(ctx).doesNotHaveBean(HibernatePropertiesCustomizer.class);
        });
    }

    @Test
    void handsTheKeyringToHibernate(@TempDir Path dir) throws Exception {
        Path[] kr = BootServiceTest.keyring(dir);
        runner.withPropertyValues("ward.keyring=" + kr[0], "ward.master-key-file=" + kr[1]).run(ctx -> {
            Keyring k = ctx.getBean(Keyring.class);
            Map<String, Object> props = new HashMap<>();
            ctx.getBean(HibernatePropertiesCustomizer.class).customize(props);
            assertThat(props).containsEntry(WardHibernate.KEYRING, k);
        });
    }

    @Test
    void aBadKeyringFailsTheStart(@TempDir Path dir) throws Exception {
        Path[] kr = BootServiceTest.keyring(dir);
        Path other = Files.writeString(dir.resolve("other.key"), otherKey());
        runner.withPropertyValues("ward.keyring=" + kr[0], "ward.master-key-file=" + other)
                .run(ctx -> assertThat(ctx).hasFailed().getFailure().hasStackTraceContaining("WardException"));
        runner.withPropertyValues("ward.keyring=" + dir.resolve("missing.json"), "ward.master-key-file=" + kr[1])
                .run(ctx -> assertThat(ctx).hasFailed());
    }

    @Test
    void theMasterKeyFromTheEnvironmentOrNothing(@TempDir Path dir) throws Exception {
        Path[] kr = BootServiceTest.keyring(dir);
        WardProperties p = new WardProperties();
        p.setKeyring(kr[0].toString());
        assertThatThrownBy(() -> WardJpaAutoConfiguration.keyring(p, null)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(MasterKey.ENV);
        assertThat(WardJpaAutoConfiguration.keyring(p, Files.readString(kr[1])).primary()).isNotNull();
        assertThatThrownBy(() -> WardJpaAutoConfiguration.keyring(p, otherKey()))
                .isInstanceOf(WardException.class);
    }

    @Test
    void backsOffForTheApplicationsOwnKeyring(@TempDir Path dir) throws Exception {
        Path[] kr = BootServiceTest.keyring(dir);
        Keyring own = Keyring.load(kr[0], MasterKey.load(kr[1]));
        runner.withPropertyValues("ward.keyring=" + dir.resolve("unused.json"))
                .withBean(Keyring.class, () -> own)
                .run(ctx -> assertThat(ctx.getBean(Keyring.class)).isSameAs(own));
    }
}
