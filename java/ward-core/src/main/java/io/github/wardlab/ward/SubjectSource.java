package io.github.wardlab.ward;

/**
 * Where a per-subject column's keys come from ({@link Column#perSubject}):
 * the subject keys themselves ({@link SubjectKeys}, which also seals), a
 * grant of the column ({@link GrantSubjects}), or one subject's grant
 * ({@link SubjectGrant}); the last two only open.
 */
public interface SubjectSource {
    /**
     * The AEAD key that opens a class-2 value of subject with header h
     * under the column's scope, or a typed error (a forgotten, private or
     * lost subject, a value the source does not open).
     */
    byte[] resolve(String subject, Ciphertext.Header h, byte[] scope);
}
