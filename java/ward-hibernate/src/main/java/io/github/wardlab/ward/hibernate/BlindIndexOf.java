package io.github.wardlab.ward.hibernate;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A {@code byte[]} attribute that holds the blind index (v2, FORMAT.md
 * "Blind index v2") of a {@link Sealed} attribute's plaintext, computed by
 * ward's listener on every insert and update, so that a sealed column is
 * searched by equality: {@code where e.emailIdx in :idx} with
 * {@link WardHibernate#blindIndexes}. The index is the Go library's
 * {@code field.NewIndex} of the sealed column — keyed by the integrity
 * epoch the verified ledger records for the index ({@link
 * WardHibernate#LEDGER}; Go's {@code Ledger.Index}), else the keyring's
 * primary, and bound to the database's ID ({@link WardHibernate#DATABASE})
 * — so Go and Java find each other's rows. An index the ledger records as
 * re-keyable (a spare column), being re-keyed, v1, or of another shape is
 * refused at the first write ({@code WardException.Binding}).
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.FIELD)
public @interface BlindIndexOf {
    /** The sealed attribute indexed. */
    String value();

    /** The normaliser: {@code nfc} (the default) or {@code fold}, either with {@code +prefix-N}. */
    String normalizer() default "nfc";

    /** The index's bytes (4 to 32; 16 by default). */
    int size() default 16;

    /** The index's name in its key's derivation; the sealed column's name by default. */
    String name() default "";
}
