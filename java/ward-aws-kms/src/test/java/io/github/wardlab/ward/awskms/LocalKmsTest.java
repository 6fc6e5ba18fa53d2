package io.github.wardlab.ward.awskms;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.wardlab.ward.Column;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.WardException;
import io.github.wardlab.ward.WardException.KeyServiceFailure;
import io.github.wardlab.ward.WardException.KeyServiceFailure.Kind;
import java.io.IOException;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Against the real local-kms server (WARD_LOCAL_KMS_BIN; it listens on
 * every interface, so it runs only where loopback is the only interface,
 * as in .ci/run's namespace): a keyring file the Go CLI (WARD_GO_CLI)
 * wrapped under the KMS key opens here, and KMS's refusals are typed.
 */
class LocalKmsTest {
    static Process server;
    static String url;
    static Path data;

    static boolean loopbackOnly() throws IOException {
        return NetworkInterface.networkInterfaces().allMatch(n -> {
            try {
                return n.isLoopback();
            } catch (IOException e) {
                return false;
            }
        });
    }

    @BeforeAll
    static void start() throws Exception {
        String bin = System.getenv("WARD_LOCAL_KMS_BIN"), cli = System.getenv("WARD_GO_CLI");
        if (bin == null || bin.isEmpty() || cli == null || cli.isEmpty()) {
            if (System.getenv("WARD_CI") != null && System.getenv("WARD_KMS_NAMESPACE") != null) {
                fail("WARD_LOCAL_KMS_BIN and WARD_GO_CLI are set by .ci/run's namespace step");
            }
            Assumptions.abort("WARD_LOCAL_KMS_BIN or WARD_GO_CLI not set");
        }
        Assumptions.assumeTrue(loopbackOnly(), "local-kms listens on every interface: run where only loopback exists (unshare -n, as .ci/run does)");
        data = Files.createTempDirectory("local-kms");
        for (int attempt = 0; attempt < 5 && url == null; attempt++) {
            int port;
            try (ServerSocket s = new ServerSocket(0)) {
                port = s.getLocalPort();
            }
            ProcessBuilder pb = new ProcessBuilder(bin).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD);
            pb.environment().putAll(Map.of("PORT", String.valueOf(port), "KMS_REGION", "us-east-1", "KMS_ACCOUNT_ID", "111122223333",
                    "KMS_SEED_PATH", Path.of("..", "..", "kms", "awskms", "testdata", "local-kms-seed.yaml").toAbsolutePath().toString(),
                    "KMS_DATA_PATH", data.toString()));
            server = pb.start();
            String u = "awskms://alias/ward-test?region=us-east-1&endpoint=http://127.0.0.1:" + port + "&timeout=2s&attempts=1";
            if (ready(u)) {
                url = u;
            } else {
                server.destroyForcibly().waitFor(); // the port was taken meanwhile: another one
            }
        }
        if (url == null) {
            fail("local-kms did not start");
        }
    }

    static boolean ready(String u) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        try (AwsKms ks = AwsKms.fromUrl(u)) {
            while (System.nanoTime() < deadline && server.isAlive()) {
                try {
                    Map<String, String> ctx = Map.of("a", "b");
                    ks.decrypt(ks.encrypt("ready".getBytes(), ctx), ctx);
                    return true;
                } catch (KeyServiceFailure e) {
                    Thread.sleep(100);
                }
            }
        }
        return false;
    }

    @AfterAll
    static void stop() throws Exception {
        if (server != null) {
            server.destroyForcibly().waitFor();
        }
    }

    static String go(String stdin, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(System.getenv("WARD_GO_CLI")));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        p.getOutputStream().write(stdin.getBytes(StandardCharsets.UTF_8));
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "ward " + String.join(" ", args));
        return out.strip();
    }

    @Test
    void aKeyringTheGoCliWrappedUnderKmsOpensHere(@TempDir Path dir) throws Exception {
        Path kr = dir.resolve("kr.json");
        go("", "keyring", "new", "--keyring", kr.toString(), "--kms", url);
        String ct = go("under KMS", "encrypt", "--keyring", kr.toString(), "--kms", url, "--table", "notes", "--column", "title", "--row", "9");
        try (AwsKms ks = AwsKms.fromUrl(url)) {
            Keyring k = Keyring.load(kr, ks);
            Column c = new Column(k, "notes", "title");
            assertEquals("under KMS", c.openText(ct, 9));
            assertThrows(WardException.WrongContext.class, () -> c.openText(ct, 10));
            // Java seals, Go opens: the keyring is one.
            assertEquals("from Java", go(c.sealText("from Java", 11), "decrypt", "--keyring", kr.toString(), "--kms", url,
                    "--table", "notes", "--column", "title", "--row", "11"));
        }
        byte[] mk = new byte[32];
        new java.security.SecureRandom().nextBytes(mk);
        MasterKey local = MasterKey.parse(java.util.Base64.getEncoder().encodeToString(mk));
        assertThrows(WardException.WrongWrapper.class, () -> Keyring.load(kr, local));
    }

    @Test
    void kmsRefusalsAreTyped() {
        try (AwsKms ks = AwsKms.fromUrl(url)) {
            byte[] wrapped = ks.encrypt("secret".getBytes(), Map.of("purpose", "test"));
            assertArrayEquals("secret".getBytes(), ks.decrypt(wrapped, Map.of("purpose", "test")));
            KeyServiceFailure e = assertThrows(KeyServiceFailure.class, () -> ks.decrypt(wrapped, Map.of("purpose", "other")));
            assertEquals(Kind.INVALID_CIPHERTEXT, e.kind());
            wrapped[wrapped.length - 1] ^= 1;
            assertEquals(Kind.INVALID_CIPHERTEXT, assertThrows(KeyServiceFailure.class, () -> ks.decrypt(wrapped, Map.of("purpose", "test"))).kind());
        }
        try (AwsKms missing = AwsKms.fromUrl(url.replace("alias/ward-test", "alias/no-such-key"))) {
            assertEquals(Kind.UNKNOWN_KEY, assertThrows(KeyServiceFailure.class, () -> missing.encrypt(new byte[32], Map.of())).kind());
        }
    }
}
