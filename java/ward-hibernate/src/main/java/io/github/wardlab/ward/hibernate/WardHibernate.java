package io.github.wardlab.ward.hibernate;

/**
 * The settings of ward's Hibernate integration ({@link WardIntegrator},
 * registered through {@code META-INF/services}): put the
 * {@link io.github.wardlab.ward.Keyring} under {@link #KEYRING} in the
 * properties the {@code EntityManagerFactory} is built with.
 */
public final class WardHibernate {
    private WardHibernate() {}

    /** The setting holding the {@code Keyring} object. */
    public static final String KEYRING = "ward.keyring";

    /**
     * The SQL condition a {@code @Table(check = @CheckConstraint(...))} (or a
     * migration) puts on a sealed
     * column, so that what bypasses the entity listeners — HQL and Criteria
     * bulk updates, native SQL — cannot store plaintext: NULL or ward's
     * text form. A ciphertext copied from another row passes it, and is
     * refused when loaded.
     */
    public static String checkCondition(String column) {
        return "(" + column + " IS NULL OR " + column + " LIKE 'w3:%' OR " + column + " LIKE 'w4:%')";
    }
}
