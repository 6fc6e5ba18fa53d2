package io.github.wardlab.ward.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.wardlab.ward.WardException;
import io.github.wardlab.ward.boot.demo.Account;
import io.github.wardlab.ward.boot.demo.AccountRepository;
import io.github.wardlab.ward.boot.demo.DemoApplication;
import io.github.wardlab.ward.boot.demo.Message;
import io.github.wardlab.ward.boot.demo.MessageRepository;
import io.github.wardlab.ward.testdb.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.security.authentication.AuthenticationManager;
import org.springframework.security.authentication.BadCredentialsException;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.crypto.argon2.Argon2PasswordEncoder;
import org.springframework.security.crypto.password.DelegatingPasswordEncoder;

/**
 * The "done when", on the demo service ({@link DemoApplication}):
 * a Spring Boot service whose only ward dependency is this starter stores
 * a message's body sealed and bound to its row, which the Go CLI opens;
 * logs in users whose hashes Spring's Argon2 encoder wrote and upgrades
 * them to ward's; and the writes that bypass Hibernate are refused. On H2,
 * and on MariaDB when WARD_TEST_MYSQL_URL names one (CI).
 */
class BootServiceTest {
    static final String SPRING_ID = "argon2@SpringSecurity_v5_8";

    /** The server databases made, dropped after the tests. */
    static final List<TestDatabases.Db> CREATED = new ArrayList<>();

    @AfterAll
    static void drop() {
        CREATED.forEach(d -> d.drop().run());
    }

    static List<String> databases() {
        return TestDatabases.kinds();
    }

    /** A fresh database of kind, dropped after the tests. */
    static TestDatabases.Db database(String kind) throws Exception {
        TestDatabases.Db db = TestDatabases.create(kind, "ward_boot_");
        CREATED.add(db);
        return db;
    }

    /** The Go vectors' keyring and master key, as files: the service is configured with paths. */
    static Path[] keyring(Path dir) throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonNode file = json.readTree(Path.of("..", "..", "field", "testdata", "context-v4.json").toFile());
        Path kr = Files.write(dir.resolve("keyring.json"), json.writeValueAsBytes(file.get("keyring")));
        Path mk = Files.writeString(dir.resolve("master.key"), file.get("master_key").asText());
        return new Path[] {kr, mk};
    }

    static ConfigurableApplicationContext start(String kind, Path dir) throws Exception {
        TestDatabases.Db db = database(kind);
        Path[] kr = keyring(dir);
        return new SpringApplicationBuilder(DemoApplication.class).web(WebApplicationType.NONE)
                .properties(Map.of("spring.datasource.url", db.url(), "spring.datasource.username", db.user(),
                        "spring.datasource.password", db.password(), "spring.jpa.hibernate.ddl-auto", "create-drop",
                        "ward.keyring", kr[0].toString(), "ward.master-key-file", kr[1].toString()))
                .run();
    }

    @ParameterizedTest
    @MethodSource("databases")
    void logInUpgradesSpringsArgon2Hashes(String kind, @TempDir Path dir) throws Exception {
        try (ConfigurableApplicationContext app = start(kind, dir)) {
            AccountRepository accounts = app.getBean(AccountRepository.class);
            AuthenticationManager auth = app.getBean(AuthenticationManager.class);
            Argon2PasswordEncoder spring = Argon2PasswordEncoder.defaultsForSpringSecurity_v5_8();
            // As a service stored them before: Spring's delegating form, and the bare encoder's.
            String prefixed = new DelegatingPasswordEncoder(SPRING_ID, Map.of(SPRING_ID, spring)).encode("alice's pw");
            accounts.save(new Account("alice", prefixed));
            accounts.save(new Account("bob", spring.encode("bob's pw")));

            assertThatThrownBy(() -> auth.authenticate(new UsernamePasswordAuthenticationToken("alice", "wrong")))
                    .isInstanceOf(BadCredentialsException.class);
            assertThat(accounts.findById("alice").orElseThrow().passwordHash()).isEqualTo(prefixed);

            for (String[] u : new String[][] {{"alice", "alice's pw"}, {"bob", "bob's pw"}}) {
                assertThat(auth.authenticate(new UsernamePasswordAuthenticationToken(u[0], u[1])).isAuthenticated()).isTrue();
                String upgraded = accounts.findById(u[0]).orElseThrow().passwordHash();
                assertThat(upgraded).startsWith("{ward}$argon2id$v=19$m=19456,t=2,p=1$");
                // Spring's own encoder reads what ward wrote: the upgrade can be rolled back.
                assertThat(spring.matches(u[1], upgraded.substring("{ward}".length()))).isTrue();
                auth.authenticate(new UsernamePasswordAuthenticationToken(u[0], u[1]));
                assertThat(accounts.findById(u[0]).orElseThrow().passwordHash()).isEqualTo(upgraded); // no second rehash
            }
        }
    }

    @ParameterizedTest
    @MethodSource("databases")
    void messagesAreSealedBoundAndReadableByGo(String kind, @TempDir Path dir) throws Exception {
        try (ConfigurableApplicationContext app = start(kind, dir)) {
            MessageRepository messages = app.getBean(MessageRepository.class);
            JdbcTemplate jdbc = app.getBean(JdbcTemplate.class);
            Message m = messages.save(new Message(7, "alice", "今日の予定: 10時に打ち合わせ"));
            Message other = messages.save(new Message(7, "bob", "another row"));
            String stored = jdbc.queryForObject("SELECT body FROM messages WHERE id = ?", String.class, m.id());
            assertThat(stored).startsWith("w4:").doesNotContain("打ち合わせ");
            assertThat(messages.findById(m.id()).orElseThrow().body()).isEqualTo("今日の予定: 10時に打ち合わせ");
            goOpens(dir, stored, m.id().toString(), "今日の予定: 10時に打ち合わせ");

            // A database writer's copy of the value to another row does not load there.
            jdbc.update("UPDATE messages SET body = ? WHERE id = ?", stored, other.id());
            assertThatThrownBy(() -> messages.findById(other.id())).satisfies(BootServiceTest::wrongContext);
            // A bulk update bypasses the entity events: the CHECK refuses its plaintext.
            assertThatThrownBy(() -> messages.overwriteBodies(7, "plaintext")).isInstanceOf(DataIntegrityViolationException.class);
            assertThat(jdbc.queryForObject("SELECT body FROM messages WHERE id = ?", String.class, m.id())).isEqualTo(stored);
        }
    }

    /** e is, or was caused by, ward's refusal of a value at another row (Spring may wrap it, or not). */
    static void wrongContext(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof WardException.WrongContext) {
                return;
            }
        }
        fail("not a WrongContext: " + e);
    }

    /** The Go CLI (WARD_GO_CLI) opens stored for its row and author. */
    static void goOpens(Path dir, String stored, String row, String want) throws Exception {
        String cli = System.getenv("WARD_GO_CLI");
        if (cli == null || cli.isEmpty()) {
            if (System.getenv("WARD_CI") != null) {
                fail("WARD_GO_CLI is not set in CI");
            }
            Assumptions.abort("WARD_GO_CLI is not set");
        }
        Process p = new ProcessBuilder(cli, "decrypt", "--keyring", dir.resolve("keyring.json").toString(),
                "--master-key-file", dir.resolve("master.key").toString(), "--table", "messages", "--column", "body",
                "--row", row, "--bind", "conversation_id=7", "--bind", "author=alice").redirectErrorStream(true).start();
        p.getOutputStream().write(stored.getBytes(StandardCharsets.US_ASCII));
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(out).isZero();
        assertThat(out).isEqualTo(want);
    }
}
