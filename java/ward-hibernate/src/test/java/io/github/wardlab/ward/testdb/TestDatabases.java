package io.github.wardlab.ward.testdb;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.PrintWriter;
import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The databases the JPA tests run on, shared by ward-hibernate's and the
 * Spring Boot starter's tests (this module's test jar): H2 in memory, and
 * CI's MariaDB and PostgreSQL over their Unix sockets when
 * WARD_TEST_MYSQL_URL and WARD_TEST_POSTGRES_URL name them. In CI
 * (WARD_CI set) a missing server fails the test rather than skipping it.
 */
public final class TestDatabases {
    private TestDatabases() {}

    /** A database of its own: its JDBC URL, user and password, and how to drop it. */
    public record Db(String url, String user, String password, Runnable drop) {
        /** A new connection to it. */
        public Connection connect() throws SQLException {
            return DriverManager.getConnection(url, user, password);
        }

        /** A DataSource of new connections to it (DriverManager's). */
        public DataSource dataSource() {
            return new DataSource() {
                @Override
                public Connection getConnection() throws SQLException {
                    return connect();
                }

                @Override
                public Connection getConnection(String u, String p) throws SQLException {
                    return DriverManager.getConnection(url, u, p);
                }

                @Override
                public PrintWriter getLogWriter() {
                    return null;
                }

                @Override
                public void setLogWriter(PrintWriter out) {}

                @Override
                public void setLoginTimeout(int seconds) {}

                @Override
                public int getLoginTimeout() {
                    return 0;
                }

                @Override
                public Logger getParentLogger() throws SQLFeatureNotSupportedException {
                    throw new SQLFeatureNotSupportedException();
                }

                @Override
                public <T> T unwrap(Class<T> iface) throws SQLException {
                    throw new SQLException("not a wrapper");
                }

                @Override
                public boolean isWrapperFor(Class<?> iface) {
                    return false;
                }
            };
        }
    }

    /** The kinds each test runs on: h2, and mariadb and postgres where the environment names them. */
    public static List<String> kinds() {
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

    /** A fresh database of kind; prefix names it on a server. */
    public static Db create(String kind, String prefix) throws SQLException {
        return switch (kind) {
            case "h2" -> new Db("jdbc:h2:mem:" + prefix + System.nanoTime() + ";DB_CLOSE_DELAY=-1", "sa", "", () -> {});
            case "mariadb" -> mariadb(prefix);
            case "postgres" -> postgres(prefix);
            default -> throw new IllegalArgumentException("no database kind " + kind);
        };
    }

    /** A fresh database on CI's MariaDB: mysql://USER@localhost/DB?socket=PATH, the password in MYSQL_PWD (.ci/mariadb). */
    static Db mariadb(String prefix) throws SQLException {
        URI u = URI.create(System.getenv("WARD_TEST_MYSQL_URL"));
        String socket = u.getQuery().replaceFirst("^.*socket=([^&]*).*$", "$1");
        String user = u.getUserInfo(), pw = System.getenv().getOrDefault("MYSQL_PWD", "");
        return fresh("jdbc:mariadb://localhost/%s?localSocket=" + socket, "", user, pw, prefix);
    }

    /**
     * A fresh database on CI's PostgreSQL, over its Unix socket through
     * junixsocket's socket factory: postgres://USER@/DB?host=DIR&port=PORT (.ci/postgres).
     */
    static Db postgres(String prefix) throws SQLException {
        URI u = URI.create(System.getenv("WARD_TEST_POSTGRES_URL"));
        String dir = u.getQuery().replaceFirst("^.*host=([^&]*).*$", "$1"), port = u.getQuery().replaceFirst("^.*port=([^&]*).*$", "$1");
        String url = "jdbc:postgresql://localhost/%s?sslmode=disable&socketFactory=org.newsclub.net.unix.AFUNIXSocketFactory$FactoryArg&socketFactoryArg="
                + dir + "/.s.PGSQL." + port;
        String user = u.getRawAuthority().replaceFirst("@.*$", ""); // postgres://ward@/…: no host, so no user info either
        return fresh(url, "postgres", user, "", prefix);
    }

    /** A database of its own on a server (url with %s for its name; admin, the database to create it from). */
    static Db fresh(String url, String admin, String user, String pw, String prefix) throws SQLException {
        String name = prefix + Long.toHexString(System.nanoTime());
        String base = String.format(url, admin);
        try (Connection c = DriverManager.getConnection(base, user, pw)) {
            c.createStatement().executeUpdate("CREATE DATABASE " + name);
        }
        return new Db(String.format(url, name), user, pw, () -> {
            try (Connection c = DriverManager.getConnection(base, user, pw)) {
                c.createStatement().executeUpdate("DROP DATABASE " + name);
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        });
    }
}
