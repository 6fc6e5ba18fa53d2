package io.github.wardlab.ward.awskms;

import io.github.wardlab.ward.WardException.KeyServiceFailure;
import io.github.wardlab.ward.WardException.KeyServiceFailure.Kind;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses the Go CLI's {@code awskms://} URLs (kms/awskms: open). */
final class KmsUrl {
    private KmsUrl() {}

    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m)");

    static AwsKms.Config parse(String url) {
        if (url == null || !url.startsWith("awskms://")) {
            throw bad("not an awskms:// URL");
        }
        int q = url.indexOf('?');
        String key = url.substring("awskms://".length(), q < 0 ? url.length() : q);
        key = key.startsWith("/") ? key.substring(1) : key;
        if (key.isEmpty()) {
            throw bad("the URL names no key (awskms://alias/NAME or awskms:///ARN)");
        }
        Map<String, String> query = query(q < 0 ? "" : url.substring(q + 1));
        URI endpoint = null;
        if (query.containsKey("endpoint")) {
            try {
                endpoint = new URI(query.get("endpoint"));
            } catch (URISyntaxException e) {
                throw bad("endpoint is not a URL");
            }
            if (endpoint.getScheme() == null || endpoint.getHost() == null) {
                throw bad("endpoint is not an absolute URL");
            }
        }
        Duration timeout = query.containsKey("timeout") ? duration(query.get("timeout")) : null;
        int attempts = 0;
        if (query.containsKey("attempts")) {
            try {
                attempts = Integer.parseInt(query.get("attempts"));
            } catch (NumberFormatException e) {
                throw bad("attempts is not a number");
            }
            if (attempts < 1 || attempts > 20) {
                throw bad("attempts must be 1 to 20");
            }
        }
        return new AwsKms.Config(key, query.get("region"), endpoint, timeout, attempts);
    }

    private static Map<String, String> query(String q) {
        Map<String, String> out = new HashMap<>();
        for (String part : q.split("&")) {
            if (part.isEmpty()) {
                continue;
            }
            int eq = part.indexOf('=');
            String k = eq < 0 ? part : part.substring(0, eq), v = eq < 0 ? "" : part.substring(eq + 1);
            try {
                out.putIfAbsent(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(v, StandardCharsets.UTF_8));
            } catch (IllegalArgumentException e) {
                throw bad("a query parameter is not URL-encoded");
            }
        }
        return out;
    }

    /** A Go duration of one unit: 500ms, 2s, 1m. */
    private static Duration duration(String s) {
        Matcher m = DURATION.matcher(s);
        if (!m.matches() || m.group(1).length() > 9) {
            throw bad("timeout must be a duration such as 500ms, 2s or 1m");
        }
        long n = Long.parseLong(m.group(1));
        Duration d = switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            default -> Duration.ofMinutes(n);
        };
        if (d.isZero()) {
            throw bad("timeout must be above zero");
        }
        return d;
    }

    private static KeyServiceFailure bad(String why) {
        return new KeyServiceFailure(Kind.MISCONFIGURED, "awskms: " + why);
    }
}
