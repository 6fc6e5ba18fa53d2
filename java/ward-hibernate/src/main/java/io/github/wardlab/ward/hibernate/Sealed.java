package io.github.wardlab.ward.hibernate;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a {@code String} attribute of an entity as sealed: the entity holds
 * its plaintext, the database column holds ward's ciphertext (text form,
 * v4), bound to the entity's table, column and id and to the values of the
 * attributes named in {@link #bind()} — a value copied to another row, or a
 * row re-pointed to another owner, does not load. The entity's id must be
 * known before its insert (assigned, UUID or sequence ids; IDENTITY columns
 * are refused).
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.FIELD, ElementType.METHOD})
public @interface Sealed {
    /** The attributes whose values the ciphertext is bound to, in order (basic attributes only). */
    String[] bind() default {};

    /**
     * Whether a stored value that is not a ward ciphertext loads as it is:
     * the mixed mode of a column moving from plaintext, on only while a job
     * seals the old rows (a database writer can plant plaintext meanwhile).
     */
    boolean acceptPlaintext() default false;
}
