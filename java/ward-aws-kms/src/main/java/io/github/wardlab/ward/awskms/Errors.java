package io.github.wardlab.ward.awskms;

import io.github.wardlab.ward.WardException.KeyServiceFailure.Kind;
import java.util.Map;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;

/** AWS KMS's error codes as the Go library's kinds (kms/awskms: Classify). */
final class Errors {
    private Errors() {}

    static final Map<String, Kind> CODES = Map.ofEntries(
            Map.entry("NotFoundException", Kind.UNKNOWN_KEY),
            Map.entry("InvalidCiphertextException", Kind.INVALID_CIPHERTEXT),
            Map.entry("IncorrectKeyException", Kind.INVALID_CIPHERTEXT),
            Map.entry("AccessDeniedException", Kind.ACCESS_DENIED),
            Map.entry("DisabledException", Kind.ACCESS_DENIED),
            Map.entry("KMSInvalidStateException", Kind.ACCESS_DENIED),
            Map.entry("ThrottlingException", Kind.THROTTLED),
            Map.entry("LimitExceededException", Kind.THROTTLED),
            Map.entry("KeyUnavailableException", Kind.UNAVAILABLE),
            Map.entry("DependencyTimeoutException", Kind.UNAVAILABLE),
            Map.entry("KMSInternalException", Kind.UNAVAILABLE),
            Map.entry("UnrecognizedClientException", Kind.MISCONFIGURED),
            Map.entry("InvalidSignatureException", Kind.MISCONFIGURED),
            Map.entry("IncompleteSignature", Kind.MISCONFIGURED),
            Map.entry("MissingAuthenticationToken", Kind.MISCONFIGURED),
            Map.entry("InvalidClientTokenId", Kind.MISCONFIGURED),
            Map.entry("ExpiredTokenException", Kind.MISCONFIGURED),
            Map.entry("InvalidKeyUsageException", Kind.MISCONFIGURED),
            Map.entry("InvalidArnException", Kind.MISCONFIGURED),
            Map.entry("ValidationException", Kind.MISCONFIGURED));

    /** The kind of a service's answer: its code, else a server fault is unavailable, anything else misconfigured. */
    static Kind kind(String code, int status) {
        Kind k = CODES.get(code);
        if (k != null) {
            return k;
        }
        return status >= 500 ? Kind.UNAVAILABLE : Kind.MISCONFIGURED;
    }

    /** The kind of a failure with no answer: missing credentials or region are misconfigured, the rest (timeouts, the network) unavailable. */
    static Kind kind(SdkException e) {
        String m = String.valueOf(e.getMessage());
        if (e instanceof SdkClientException && (m.contains("credentials") || m.contains("Unable to load region"))) {
            return Kind.MISCONFIGURED;
        }
        return Kind.UNAVAILABLE;
    }
}
