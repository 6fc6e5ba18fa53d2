package io.github.wardlab.ward.awskms;

import io.github.wardlab.ward.KeyService;
import io.github.wardlab.ward.WardException;
import io.github.wardlab.ward.WardException.KeyServiceFailure;
import io.github.wardlab.ward.WardException.KeyServiceFailure.Kind;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain;
import software.amazon.awssdk.services.kms.KmsClient;
import software.amazon.awssdk.services.kms.KmsClientBuilder;
import software.amazon.awssdk.services.kms.model.DecryptRequest;
import software.amazon.awssdk.services.kms.model.EncryptRequest;
import software.amazon.awssdk.services.kms.model.KmsException;

/**
 * An AWS KMS key as ward's {@link KeyService}, through the AWS SDK for Java
 * v2: a keyring file the Go CLI wrapped under {@code --kms awskms://…} opens
 * here with {@code Keyring.load(path, AwsKms.fromUrl(url))}. Every call
 * sends the encryption context, so a wrapped key moved to another file or
 * purpose does not unwrap. Calls have a deadline (5 s by default) and a few
 * attempts (3); every failure is a {@link WardException.KeyServiceFailure}
 * of the Go library's kinds. Thread-safe; {@link #close} releases the
 * client.
 */
public final class AwsKms implements KeyService, AutoCloseable {
    /** The provider's name in a keyring file's {@code wrap} header. */
    public static final String PROVIDER = "awskms";

    private final KmsClient client;
    private final String keyId;

    /**
     * What names and reaches the key.
     *
     * @param keyId a key ID, ARN or {@code alias/NAME}
     * @param region the region, or null for the SDK's default chain (then us-east-1)
     * @param endpoint an AWS-KMS-compatible endpoint (local-kms), or null for AWS's
     * @param timeout each call's deadline, attempts included (null: 5 s)
     * @param maxAttempts attempts per call (0: 3)
     */
    public record Config(String keyId, String region, URI endpoint, Duration timeout, int maxAttempts) {
        /** A key in the default region, at AWS. */
        public static Config of(String keyId) {
            return new Config(keyId, null, null, null, 0);
        }
    }

    /** The key cfg names; nothing is called until the first encrypt or decrypt. */
    public AwsKms(Config cfg) {
        this(cfg, System.getenv());
    }

    AwsKms(Config cfg, Map<String, String> env) {
        if (cfg.keyId() == null || cfg.keyId().isEmpty()) {
            throw new KeyServiceFailure(Kind.MISCONFIGURED, "awskms: a key ID, ARN or alias/NAME is required");
        }
        Duration timeout = cfg.timeout() != null && !cfg.timeout().isNegative() && !cfg.timeout().isZero() ? cfg.timeout() : Duration.ofSeconds(5);
        int attempts = cfg.maxAttempts() > 0 ? cfg.maxAttempts() : 3;
        KmsClientBuilder b = KmsClient.builder()
                .httpClient(UrlConnectionHttpClient.builder().connectionTimeout(timeout).socketTimeout(timeout).build())
                .region(region(cfg.region()))
                .overrideConfiguration(o -> o.apiCallTimeout(timeout)
                        .retryStrategy(AwsRetryStrategy.standardRetryStrategy().toBuilder().maxAttempts(attempts).build()));
        if (cfg.endpoint() != null) {
            b.endpointOverride(cfg.endpoint());
            // A local KMS server takes any credentials; the Go provider sends these.
            if (isEmpty(env.get("AWS_ACCESS_KEY_ID")) && isEmpty(env.get("AWS_PROFILE"))) {
                b.credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("ward-local", "ward-local")));
            }
        }
        this.client = b.build();
        this.keyId = cfg.keyId();
    }

    /**
     * The key an {@code awskms://} URL names, as the Go CLI's {@code --kms}
     * reads it: {@code awskms://alias/NAME?region=R} (or a key ID),
     * {@code awskms:///ARN}, with {@code endpoint=URL}, {@code timeout=2s}
     * and {@code attempts=N} optional.
     */
    public static AwsKms fromUrl(String url) {
        return new AwsKms(KmsUrl.parse(url));
    }

    private static boolean isEmpty(String s) {
        return s == null || s.isEmpty();
    }

    private static Region region(String region) {
        if (!isEmpty(region)) {
            return Region.of(region);
        }
        try {
            return DefaultAwsRegionProviderChain.builder().build().getRegion();
        } catch (SdkClientException e) {
            return Region.US_EAST_1; // as the Go provider defaults
        }
    }

    @Override
    public String provider() {
        return PROVIDER;
    }

    @Override
    public String keyId() {
        return keyId;
    }

    @Override
    public byte[] encrypt(byte[] plaintext, Map<String, String> context) {
        try {
            return client.encrypt(EncryptRequest.builder().keyId(keyId).plaintext(SdkBytes.fromByteArray(plaintext))
                    .encryptionContext(context).build()).ciphertextBlob().asByteArray();
        } catch (SdkException e) {
            throw failure("Encrypt", e);
        }
    }

    @Override
    public byte[] decrypt(byte[] ciphertext, Map<String, String> context) {
        try {
            return client.decrypt(DecryptRequest.builder().keyId(keyId).ciphertextBlob(SdkBytes.fromByteArray(ciphertext))
                    .encryptionContext(context).build()).plaintext().asByteArray();
        } catch (SdkException e) {
            throw failure("Decrypt", e);
        }
    }

    /** The typed failure of op: the service's error code and kind, never its message (it may echo input). */
    static KeyServiceFailure failure(String op, SdkException e) {
        if (e instanceof KmsException k && k.awsErrorDetails() != null) {
            String code = String.valueOf(k.awsErrorDetails().errorCode());
            return new KeyServiceFailure(Errors.kind(code, k.statusCode()), "awskms " + op + ": " + code);
        }
        return new KeyServiceFailure(Errors.kind(e), "awskms " + op + ": " + e.getClass().getSimpleName());
    }

    @Override
    public void close() {
        client.close();
    }

    @Override
    public String toString() {
        return "AwsKms(" + keyId + ")";
    }
}
