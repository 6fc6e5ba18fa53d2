package io.github.wardlab.ward.hibernate;

import io.github.wardlab.ward.BlindIndex;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.LedgerState;
import io.github.wardlab.ward.Normalizer;
import io.github.wardlab.ward.WardException;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.hibernate.SessionFactory;
import org.hibernate.engine.spi.SessionFactoryImplementor;
import org.hibernate.persister.entity.AbstractEntityPersister;
import org.hibernate.persister.entity.EntityPersister;

/**
 * One {@link BlindIndexOf} attribute resolved: the sealed column it indexes,
 * and its index under each enabled key of the keyring, derived once (the
 * keyring a session factory holds does not change).
 */
final class Indexes {
    /** The resolved attributes of each session factory, by entity name and attribute. */
    private static final Map<SessionFactory, Map<String, Indexes>> CACHE = Collections.synchronizedMap(new WeakHashMap<>());

    private final BlindIndex primary;
    private final List<BlindIndex> enabled;

    private Indexes(Keyring keyring, String table, String column, BlindIndex.Options options) {
        this.primary = BlindIndex.v2(keyring, table, column, options); // a bad size or name fails here
        List<BlindIndex> all = new ArrayList<>(List.of(primary));
        for (Keyring.Key k : keyring.keys().values()) {
            if (k.id() != primary.epoch() && !k.state().equals("disabled")) {
                BlindIndex.Options o = new BlindIndex.Options(options.database(), options.name(), options.normalizer(), options.size(), k.id());
                all.add(BlindIndex.v2(keyring, table, column, o));
            }
        }
        this.enabled = List.copyOf(all);
    }

    /** The index a write stores: under the epoch the ledger records for it, else the keyring's primary. */
    BlindIndex primary() {
        return primary;
    }

    /** The index of value under each enabled key of the keyring, the written one's first. */
    List<byte[]> all(String value) {
        List<byte[]> out = new ArrayList<>(enabled.size());
        for (BlindIndex b : enabled) {
            out.add(b.compute(value));
        }
        return out;
    }

    /** The index attribute of an entity class, looked up in a session factory's mapping. */
    static Indexes of(SessionFactory sf, Class<?> entity, String attribute) {
        Map<String, Indexes> resolved = CACHE.computeIfAbsent(sf, k -> new ConcurrentHashMap<>());
        return resolved.computeIfAbsent(entity.getName() + "#" + attribute, k -> resolve(sf, entity, attribute));
    }

    private static Indexes resolve(SessionFactory sf, Class<?> entity, String attribute) {
        SessionFactoryImplementor sfi = sf.unwrap(SessionFactoryImplementor.class);
        EntityPersister p = sfi.getMappingMetamodel().getEntityDescriptor(entity);
        Field f = field(entity, attribute);
        BlindIndexOf b = f == null ? null : f.getAnnotation(BlindIndexOf.class);
        if (b == null) {
            throw new WardException.Binding(entity.getSimpleName() + "." + attribute + " is not a @BlindIndexOf attribute");
        }
        return of(p, sfi.getProperties(), f, b);
    }

    static Indexes of(EntityPersister persister, Map<String, Object> settings, Field f, BlindIndexOf b) {
        String where = persister.getEntityName() + "." + f.getName();
        if (f.getType() != byte[].class) {
            throw new WardException.Binding(where + ": @BlindIndexOf takes a byte[] attribute");
        }
        if (!(persister instanceof AbstractEntityPersister p)) {
            throw new WardException.Binding(where + ": an entity persister ward cannot read column names from");
        }
        Field sealed = field(persister.getMappedClass(), b.value());
        if (sealed == null || sealed.getAnnotation(Sealed.class) == null) {
            throw new WardException.Binding(where + ": indexes " + b.value() + ", which is not a @Sealed attribute");
        }
        Object kr = settings.get(WardHibernate.KEYRING), db = settings.get(WardHibernate.DATABASE);
        if (!(kr instanceof Keyring keyring)) {
            throw new WardException.Binding(where + ": the setting " + WardHibernate.KEYRING + " holds no Keyring");
        }
        LedgerState ledger = SealedAttributes.ledger(settings, where);
        if (ledger != null && db != null && !ledger.database().equals(db)) {
            throw new WardException.Binding(where + ": the setting " + WardHibernate.DATABASE + " names another database than its ledger");
        }
        String database = ledger != null ? ledger.database() : db instanceof String s ? s : "";
        if (database.isEmpty()) {
            throw new WardException.Binding(where + ": a blind index needs the database's ID: the setting " + WardHibernate.LEDGER + " or " + WardHibernate.DATABASE);
        }
        String[] cols = p.getPropertyColumnNames(p.getPropertyIndex(b.value()));
        String table = p.getTableName().substring(p.getTableName().lastIndexOf('.') + 1);
        Normalizer n = Normalizer.parse(b.normalizer(), 1);
        long epoch = ledger == null ? 0 : recordedEpoch(ledger, where, table, cols[0], b, n, p.getPropertyColumnNames(f.getName())[0]);
        return new Indexes(keyring, table, cols[0], new BlindIndex.Options(database, b.name(), n, b.size(), epoch));
    }

    /**
     * The epoch the verified ledger records for the index (Go's {@code
     * Ledger.Index}: the one its processes write and look up under, which
     * only a re-key changes), or 0 (the keyring's primary) for an index it
     * does not record yet. A record of another shape, of a re-keyable index
     * (two columns: Go's {@code Ledger.Indexer}, which follows the re-key's
     * phases), of a re-key under way, or of a v1 index, is refused: this
     * attribute would write what Go's look-ups miss.
     */
    static long recordedEpoch(LedgerState ledger, String where, String table, String column, BlindIndexOf b, Normalizer n, String indexColumn) {
        LedgerState.Index rec = ledger.index(table, column, b.name().isEmpty() ? column : b.name());
        if (rec == null) {
            return 0;
        }
        if (!rec.spare().isEmpty() || rec.rekeying() || rec.epoch() == 0) {
            throw new WardException.Binding(where + ": the ledger records this index as re-keyable, being re-keyed or v1 (its spare column "
                    + clip(rec.spare()) + "): @BlindIndexOf writes one column under one epoch; index it with the Go library's Ledger.Indexer");
        }
        if (!rec.normalizer().equals(n.name()) || rec.normalizerVersion() != n.version() || rec.size() != b.size() || !rec.index().equals(indexColumn)) {
            throw new WardException.Binding(where + ": the ledger records this index in " + clip(rec.index()) + " as " + clip(rec.normalizer()) + " v"
                    + rec.normalizerVersion() + " of " + rec.size() + " bytes, not in " + indexColumn + " as " + n.name() + " v" + n.version() + " of " + b.size());
        }
        return rec.epoch();
    }

    /** A recorded name, at most 40 characters, for an error. */
    private static String clip(String s) {
        return s.length() > 40 ? s.substring(0, 40) + "…" : s;
    }

    /** A declared field of c or its superclasses. */
    static Field field(Class<?> c, String name) {
        for (; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (f.getName().equals(name)) {
                    return f;
                }
            }
        }
        return null;
    }
}
