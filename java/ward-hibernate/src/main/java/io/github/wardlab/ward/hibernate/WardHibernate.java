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
     * The setting holding the database's ID ({@code db-…}, as its verified
     * ledger says: {@code Ledger.verify(connection, keyring).database()}),
     * which {@link BlindIndexOf} indexes are bound to.
     */
    public static final String DATABASE = "ward.database";

    /**
     * The setting holding the database's verified ledger (a {@code
     * LedgerState} from {@code Ledger.verify(connection, keyring)} at
     * start): every sealed column writes under its rule (v4 once the fleet
     * opened it, v3 until then), and blind indexes take its database ID and
     * the epoch it records for them. It is the ledger as verified then: a form the
     * fleet opens later takes effect at the next start.
     */
    public static final String LEDGER = "ward.ledger";

    /**
     * The blind indexes of value for an entity's {@link BlindIndexOf}
     * attribute, one per key the keyring holds enabled (each an epoch an
     * index may have been written under), for {@code where e.emailIdx in
     * :idx}: after a rotation, rows indexed under the old primary are still
     * found until they are re-indexed.
     */
    public static java.util.List<byte[]> blindIndexes(org.hibernate.SessionFactory sf, Class<?> entity, String indexAttribute, String value) {
        return Indexes.of(sf, entity, indexAttribute).all(value);
    }

    /** The blind index of value an insert writes now: under the epoch the verified ledger records for it, else the keyring's primary. */
    public static byte[] blindIndex(org.hibernate.SessionFactory sf, Class<?> entity, String indexAttribute, String value) {
        return Indexes.of(sf, entity, indexAttribute).primary().compute(value);
    }

    /**
     * The fleet forms (FORMAT.md, "Process registry") a process with this
     * session factory reads: {@code sealed:TABLE.COLUMN} for each
     * {@link Sealed} attribute of a mapped entity, sorted, for {@code
     * FleetMember.join} beside ward-java's own ({@code FleetMember.READS}),
     * so a form opened for one of these columns waits for this process.
     */
    public static java.util.List<String> forms(org.hibernate.SessionFactory sf) {
        java.util.TreeSet<String> out = new java.util.TreeSet<>();
        sf.unwrap(org.hibernate.engine.spi.SessionFactoryImplementor.class).getMappingMetamodel().forEachEntityDescriptor(p -> {
            if (!(p instanceof org.hibernate.persister.entity.AbstractEntityPersister ap)) {
                return;
            }
            String table = ap.getTableName().substring(ap.getTableName().lastIndexOf('.') + 1);
            for (Class<?> c = p.getMappedClass(); c != null && c != Object.class; c = c.getSuperclass()) {
                for (java.lang.reflect.Field f : c.getDeclaredFields()) {
                    if (f.getAnnotation(Sealed.class) != null) {
                        out.add("sealed:" + table + "." + ap.getPropertyColumnNames(f.getName())[0]);
                    }
                }
            }
        });
        return java.util.List.copyOf(out);
    }

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
