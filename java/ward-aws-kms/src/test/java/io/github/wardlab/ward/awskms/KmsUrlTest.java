package io.github.wardlab.ward.awskms;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.wardlab.ward.WardException.KeyServiceFailure;
import io.github.wardlab.ward.WardException.KeyServiceFailure.Kind;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The awskms:// URLs the Go CLI reads, the error kinds, and an endpoint that does not answer. */
class KmsUrlTest {
    @Test
    void urlsAsGoReadsThem() {
        AwsKms.Config c = KmsUrl.parse("awskms://alias/ward-test?region=eu-west-1&endpoint=http://127.0.0.1:4599&timeout=2s&attempts=2");
        assertEquals("alias/ward-test", c.keyId());
        assertEquals("eu-west-1", c.region());
        assertEquals("http://127.0.0.1:4599", c.endpoint().toString());
        assertEquals(Duration.ofSeconds(2), c.timeout());
        assertEquals(2, c.maxAttempts());
        AwsKms.Config arn = KmsUrl.parse("awskms:///arn:aws:kms:us-east-1:111122223333:key/bc436485-5092-42b8-92a3-0aa8b93536dc");
        assertEquals("arn:aws:kms:us-east-1:111122223333:key/bc436485-5092-42b8-92a3-0aa8b93536dc", arn.keyId());
        assertNull(arn.region());
        assertNull(arn.endpoint());
        assertEquals("bc436485-5092-42b8-92a3-0aa8b93536dc", KmsUrl.parse("awskms://bc436485-5092-42b8-92a3-0aa8b93536dc").keyId());
        assertEquals(Duration.ofMillis(500), KmsUrl.parse("awskms://k?timeout=500ms").timeout());
        assertEquals(Duration.ofMinutes(1), KmsUrl.parse("awskms://k?timeout=1m").timeout());
    }

    @Test
    void badUrlsAreMisconfigured() {
        for (String u : new String[] {"awskms://", "awskms:///", "awskms://?region=x", "local://x", "kms://alias/x", null,
                "awskms://k?endpoint=not a url", "awskms://k?endpoint=/relative", "awskms://k?timeout=2", "awskms://k?timeout=0s",
                "awskms://k?timeout=9999999999s", "awskms://k?attempts=0", "awskms://k?attempts=x", "awskms://k?attempts=99",
                "awskms://k?region=%zz"}) {
            KeyServiceFailure e = assertThrows(KeyServiceFailure.class, () -> KmsUrl.parse(u), String.valueOf(u));
            assertEquals(Kind.MISCONFIGURED, e.kind(), String.valueOf(u));
        }
        assertThrows(KeyServiceFailure.class, () -> new AwsKms(new AwsKms.Config("", null, null, null, 0)));
    }

    @Test
    void errorCodesAsGoClassifiesThem() {
        Map<String, Kind> want = Map.of("NotFoundException", Kind.UNKNOWN_KEY, "InvalidCiphertextException", Kind.INVALID_CIPHERTEXT,
                "IncorrectKeyException", Kind.INVALID_CIPHERTEXT, "DisabledException", Kind.ACCESS_DENIED,
                "ThrottlingException", Kind.THROTTLED, "KMSInternalException", Kind.UNAVAILABLE,
                "UnrecognizedClientException", Kind.MISCONFIGURED, "ValidationException", Kind.MISCONFIGURED);
        want.forEach((code, kind) -> assertEquals(kind, Errors.kind(code, 400), code));
        assertEquals(Kind.UNAVAILABLE, Errors.kind("SomethingNew", 503));
        assertEquals(Kind.MISCONFIGURED, Errors.kind("SomethingNew", 400));
    }

    /** A closed port: a typed UNAVAILABLE within the deadline, never a hang, and nothing wrapped in the message. */
    @Test
    void anEndpointThatDoesNotAnswerIsUnavailable() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        try (AwsKms ks = AwsKms.fromUrl("awskms://alias/x?region=us-east-1&endpoint=http://127.0.0.1:" + port + "&timeout=2s&attempts=2")) {
            KeyServiceFailure e = assertThrows(KeyServiceFailure.class, () -> ks.encrypt("do not echo".getBytes(), Map.of("a", "b")));
            assertEquals(Kind.UNAVAILABLE, e.kind());
            assertTrue(e.getMessage().startsWith("awskms Encrypt: "), e.getMessage());
            assertTrue(!e.getMessage().contains("do not echo"));
        }
    }

    /** A keyring file under an AWS KMS key whose service does not answer: the service's fault, typed, not a damaged file. */
    @Test
    void aKeyServiceOutageIsNotACorruptFile() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String file = "{\"format\":\"ward-keyring/v2\",\"wrap\":{\"provider\":\"awskms\",\"key_id\":\"alias/x\"},"
                + "\"wrapped_key\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\",\"sealed\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}";
        try (AwsKms ks = AwsKms.fromUrl("awskms://alias/x?region=us-east-1&endpoint=http://127.0.0.1:" + port + "&timeout=2s&attempts=1")) {
            KeyServiceFailure e = assertThrows(KeyServiceFailure.class, () -> io.github.wardlab.ward.Keyring.parse(file.getBytes(), ks));
            assertEquals(Kind.UNAVAILABLE, e.kind());
        }
    }
}
