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
            if (k.id() != keyring.primary().id() && !k.state().equals("disabled")) {
                BlindIndex.Options o = new BlindIndex.Options(options.database(), options.name(), options.normalizer(), options.size(), k.id());
                all.add(BlindIndex.v2(keyring, table, column, o));
            }
        }
        this.enabled = List.copyOf(all);
    }

    /** The index under the keyring's primary. */
    BlindIndex primary() {
        return primary;
    }

    /** The index of value under each enabled key of the keyring, the primary's first. */
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
        String table = p.getTableName();
        BlindIndex.Options o = new BlindIndex.Options(database, b.name(), Normalizer.parse(b.normalizer(), 1), b.size(), 0);
        return new Indexes(keyring, table.substring(table.lastIndexOf('.') + 1), cols[0], o);
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
