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
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
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

    /** The MariaDB databases made, dropped after the tests: server URL, user, password, name. */
    static final List<String[]> CREATED = new ArrayList<>();

    @AfterAll
    static void drop() throws Exception {
        for (String[] d : CREATED) {
            try (Connection c = DriverManager.getConnection(d[0], d[1], d[2])) {
                c.createStatement().executeUpdate("DROP DATABASE " + d[3]);
            }
        }
    }

    static List<String> databases() {
        List<String> out = new ArrayList<>(List.of("h2"));
        for (String[] d : new String[][] {{"mariadb", "WARD_TEST_MYSQL_URL"}, {"postgres", "WARD_TEST_POSTGRES_URL"}}) {
            String url = System.getenv(d[1]);
            if (url != null && !url.isEmpty()) {
                out.add(d[0]);
            } else if (System.getenv("WARD_CI") != null) {
                fail(d[1] + " is not set in CI");
            }
        }
        return out;
    }

    /** The JDBC URL, user and password of a fresh database of kind. */
    static String[] database(String kind) throws Exception {
        if (kind.equals("h2")) {
            return new String[] {"jdbc:h2:mem:boot" + System.nanoTime() + ";DB_CLOSE_DELAY=-1", "sa", ""};
        }
        String url, admin, user, pw;
        if (kind.equals("mariadb")) { // mysql://USER@localhost/DB?socket=PATH, the password in MYSQL_PWD (.ci/mariadb)
            URI u = URI.create(System.getenv("WARD_TEST_MYSQL_URL"));
            url = "jdbc:mariadb://localhost/%s?localSocket=" + u.getQuery().replaceFirst("^.*socket=([^&]*).*$", "$1");
            admin = "";
            user = u.getUserInfo();
            pw = System.getenv().getOrDefault("MYSQL_PWD", "");
        } else { // postgres://USER@/DB?host=DIR&port=PORT (.ci/postgres), over the Unix socket through junixsocket
            URI u = URI.create(System.getenv("WARD_TEST_POSTGRES_URL"));
            String dir = u.getQuery().replaceFirst("^.*host=([^&]*).*$", "$1"), port = u.getQuery().replaceFirst("^.*port=([^&]*).*$", "$1");
            url = "jdbc:postgresql://localhost/%s?sslmode=disable&socketFactory=org.newsclub.net.unix.AFUNIXSocketFactory$FactoryArg&socketFactoryArg="
                    + dir + "/.s.PGSQL." + port;
            admin = "postgres";
            user = u.getRawAuthority().replaceFirst("@.*$", "");
            pw = "";
        }
        String name = "ward_boot_" + Long.toHexString(System.nanoTime());
        try (Connection c = DriverManager.getConnection(String.format(url, admin), user, pw)) {
            c.createStatement().executeUpdate("CREATE DATABASE " + name);
        }
        CREATED.add(new String[] {String.format(url, admin), user, pw, name});
        return new String[] {String.format(url, name), user, pw};
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
        String[] db = database(kind);
        Path[] kr = keyring(dir);
        return new SpringApplicationBuilder(DemoApplication.class).web(WebApplicationType.NONE)
                .properties(Map.of("spring.datasource.url", db[0], "spring.datasource.username", db[1],
                        "spring.datasource.password", db[2], "spring.jpa.hibernate.ddl-auto", "create-drop",
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
