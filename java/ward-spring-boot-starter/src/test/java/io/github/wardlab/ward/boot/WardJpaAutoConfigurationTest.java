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
        assertThatThrownBy(() -> WardJpaAutoConfiguration.keyring(p, Map.of())).isInstanceOf(WardException.class)
                .hasMessageContaining(MasterKey.ENV);
        assertThat(WardJpaAutoConfiguration.keyring(p, Map.of(MasterKey.ENV, Files.readString(kr[1]))).primary()).isNotNull();
        assertThatThrownBy(() -> WardJpaAutoConfiguration.keyring(p, Map.of(MasterKey.ENV, otherKey())))
                .isInstanceOf(WardException.class);
        p.setMasterKeyFile(kr[1].toString()); // the file wins over the environment
        assertThat(WardJpaAutoConfiguration.keyring(p, Map.of(MasterKey.ENV, otherKey())).primary()).isNotNull();
    }

    @Test
    void backsOffForTheApplicationsOwnKeyring(@TempDir Path dir) throws Exception {
        Path[] kr = BootServiceTest.keyring(dir);
        Keyring own = Keyring.load(kr[0], MasterKey.load(kr[1]));
        runner.withPropertyValues("ward.keyring=" + dir.resolve("unused.json"))
                .withBean(Keyring.class, () -> own)
                .run(ctx -> assertThat(ctx.getBean(Keyring.class)).isSameAs(own));
    }

    /** ward.database reaches Hibernate; ward.verify-ledger verifies the DataSource's ledger at start, or fails it. */
    @Test
    void theDatabaseAndTheLedger(@TempDir Path dir) throws Exception {
        Path[] kr = BootServiceTest.keyring(dir);
        runner.withPropertyValues("ward.keyring=" + kr[0], "ward.master-key-file=" + kr[1], "ward.database=db-0123456789abcdef").run(ctx -> {
            Map<String, Object> props = new HashMap<>();
            ctx.getBean(HibernatePropertiesCustomizer.class).customize(props);
            assertThat(props).containsEntry(WardHibernate.DATABASE, "db-0123456789abcdef").doesNotContainKey(WardHibernate.LEDGER);
        });
        // Go's ledger vector, in an H2 database of its own: its keyring verifies it.
        com.fasterxml.jackson.databind.JsonNode v = ledgerVector();
        Path lkr = Files.write(dir.resolve("ledger-kr.json"), new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsBytes(v.get("keyring")));
        Path lmk = Files.writeString(dir.resolve("ledger-mk.b64"), v.get("master_key").asText());
        org.h2.jdbcx.JdbcDataSource ds = new org.h2.jdbcx.JdbcDataSource();
        ds.setURL("jdbc:h2:mem:ledger" + System.nanoTime() + ";DB_CLOSE_DELAY=-1");
        ApplicationContextRunner verifying = runner.withPropertyValues("ward.keyring=" + lkr, "ward.master-key-file=" + lmk, "ward.verify-ledger=true")
                .withBean(javax.sql.DataSource.class, () -> ds);
        Map<String, Object> props = new HashMap<>();
        verifying.run(ctx -> assertThatThrownBy(() -> ctx.getBean(HibernatePropertiesCustomizer.class).customize(props))
                .isInstanceOf(WardException.Ledger.class)); // no ledger: nothing is written there
        plantLedger(ds, v);
        verifying.run(ctx -> {
            ctx.getBean(HibernatePropertiesCustomizer.class).customize(props);
            assertThat(((io.github.wardlab.ward.LedgerState) props.get(WardHibernate.LEDGER)).database()).isEqualTo("db-0123456789abcdef");
        });
        try (java.sql.Connection c = ds.getConnection()) { // an older copy put back
            var row = v.get("rows").get(0);
            var st = c.prepareStatement("UPDATE ward_ledger SET counter = 1, body = ?, mac = ?");
            st.setString(1, row.get("body").asText());
            st.setString(2, row.get("mac").asText());
            st.executeUpdate();
        }
        verifying.run(ctx -> assertThatThrownBy(() -> ctx.getBean(HibernatePropertiesCustomizer.class).customize(new HashMap<>()))
                .isInstanceOf(WardException.Ledger.class).hasMessageContaining("older copy"));
        assertThatThrownBy(() -> WardJpaAutoConfiguration.verify(null, null, "ward_ledger")).isInstanceOf(IllegalStateException.class);
    }

    /** ward.fleet.join registers the process with ward.fleet.forms, and the context's close leaves; no ledger fails the start. */
    @Test
    void theFleet(@TempDir Path dir) throws Exception {
        com.fasterxml.jackson.databind.JsonNode v = ledgerVector();
        Path lkr = Files.write(dir.resolve("ledger-kr.json"), new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsBytes(v.get("keyring")));
        Path lmk = Files.writeString(dir.resolve("ledger-mk.b64"), v.get("master_key").asText());
        org.h2.jdbcx.JdbcDataSource ds = new org.h2.jdbcx.JdbcDataSource();
        ds.setURL("jdbc:h2:mem:fleet" + System.nanoTime() + ";DB_CLOSE_DELAY=-1");
        ApplicationContextRunner joining = runner.withPropertyValues("ward.keyring=" + lkr, "ward.master-key-file=" + lmk, "ward.fleet.join=true",
                "ward.fleet.forms=password:argon2id,password:bcrypt").withBean(javax.sql.DataSource.class, () -> ds);
        joining.run(ctx -> assertThat(ctx).hasFailed()); // no ledger: no registration
        plantLedger(ds, v);
        String[] id = new String[1];
        joining.run(ctx -> {
            io.github.wardlab.ward.FleetMember m = ctx.getBean(io.github.wardlab.ward.FleetMember.class);
            id[0] = m.id();
            assertThat(m.forms()).contains("password:argon2id", "password:bcrypt", "ciphertext:v4");
        });
        try (java.sql.Connection c = ds.getConnection();
                var rs = c.createStatement().executeQuery("SELECT exited, caps FROM ward_fleet WHERE id = '" + id[0] + "'")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getInt(1)).isEqualTo(1); // the context closed: it left
            assertThat(rs.getString(2)).contains("password:bcrypt");
        }
        runner.withPropertyValues("ward.keyring=" + lkr, "ward.master-key-file=" + lmk)
                .run(ctx -> assertThat(ctx).doesNotHaveBean(io.github.wardlab.ward.FleetMember.class));
    }

    /** Go's ledger vector (ledger/testdata/ledger-v1.json). */
    static com.fasterxml.jackson.databind.JsonNode ledgerVector() throws Exception {
        return new com.fasterxml.jackson.databind.ObjectMapper().readTree(Path.of("..", "..", "ledger", "testdata", "ledger-v1.json").toFile());
    }

    /** The vector's current ledger row, in ds's database. */
    static void plantLedger(javax.sql.DataSource ds, com.fasterxml.jackson.databind.JsonNode v) throws Exception {
        try (java.sql.Connection c = ds.getConnection()) {
            c.createStatement().executeUpdate("CREATE TABLE ward_ledger (id INT PRIMARY KEY, counter BIGINT, body VARCHAR(4000), mac VARCHAR(64))");
            var row = v.get("rows").get(1);
            var st = c.prepareStatement("INSERT INTO ward_ledger VALUES (1, 2, ?, ?)");
            st.setString(1, row.get("body").asText());
            st.setString(2, row.get("mac").asText());
            st.executeUpdate();
        }
    }
}
