package io.github.wardlab.ward;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;

/** The Go library's golden vectors, read from the repository's testdata. */
final class Vectors {
    private Vectors() {}

    static final ObjectMapper JSON = new ObjectMapper();

    /** The repository's root, from this module's folder (java/ward-core). */
    static Path repo(String relative) {
        return Path.of("..", "..").resolve(relative);
    }

    static JsonNode read(String relative) throws IOException {
        return JSON.readTree(repo(relative).toFile());
    }

    /** The keyring a vector file holds, opened with its master key. */
    static Keyring keyring(JsonNode file) throws IOException {
        return Keyring.parse(JSON.writeValueAsBytes(file.get("keyring")), MasterKey.parse(file.get("master_key").asText()));
    }

    static byte[] hex(String s) {
        return HexFormat.of().parseHex(s);
    }

    static String[] bind(JsonNode v) {
        List<String> out = new ArrayList<>();
        v.path("bind").forEach(n -> out.add(n.asText()));
        return out.toArray(new String[0]);
    }

    /** A vector's bound values, as the Java types an application passes. */
    static Object[] values(JsonNode v) {
        List<Object> out = new ArrayList<>();
        for (JsonNode n : v.path("values")) {
            String val = n.path("value").asText();
            out.add(switch (n.get("type").asText()) {
                case "int64" -> Long.parseLong(val);
                case "string" -> val;
                case "null" -> null;
                case "bool" -> Boolean.parseBoolean(val);
                case "bytes" -> hex(val);
                case "time" -> OffsetDateTime.parse(val);
                case "uuid" -> new UUID(Long.parseUnsignedLong(val.substring(0, 16), 16), Long.parseUnsignedLong(val.substring(16), 16));
                default -> throw new IllegalArgumentException("a vector value of type " + n.get("type"));
            });
        }
        return out.toArray();
    }

    /** Skips a test without the Go CLI (WARD_GO_CLI), or fails it in CI, which always builds it. */
    static void requireGoCli() {
        String cli = System.getenv("WARD_GO_CLI");
        if (cli == null || cli.isEmpty()) {
            if (System.getenv("WARD_CI") != null) {
                org.junit.jupiter.api.Assertions.fail("WARD_GO_CLI is not set in CI");
            }
            org.junit.jupiter.api.Assumptions.assumeTrue(false, "WARD_GO_CLI is not set");
        }
    }
}
