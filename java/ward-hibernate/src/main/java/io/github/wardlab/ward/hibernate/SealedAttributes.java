package io.github.wardlab.ward.hibernate;

import io.github.wardlab.ward.BlindIndex;
import io.github.wardlab.ward.Column;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.LedgerState;
import io.github.wardlab.ward.WardException;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.hibernate.persister.entity.AbstractEntityPersister;
import org.hibernate.persister.entity.EntityPersister;
import org.hibernate.type.Type;

/** An entity's sealed attributes, resolved against its persister once. */
final class SealedAttributes {
    /** One sealed attribute: its index, its column and its bound attributes' indexes. */
    record Attribute(String name, int index, Column column, int[] bind, boolean acceptPlaintext) {}

    /** One blind index attribute: its index, its sealed attribute's, and the index under the primary. */
    record Index(int index, int source, BlindIndex primary) {}

    final List<Attribute> attributes;
    final List<Index> indexes;

    private SealedAttributes(List<Attribute> attributes, List<Index> indexes) {
        this.attributes = attributes;
        this.indexes = indexes;
    }

    boolean isEmpty() {
        return attributes.isEmpty() && indexes.isEmpty();
    }

    /** The sealed and index attributes of the persister's entity class and its superclasses. */
    static SealedAttributes of(EntityPersister persister, Keyring keyring, Map<String, Object> settings) {
        List<Attribute> out = new ArrayList<>();
        List<Index> idx = new ArrayList<>();
        for (Class<?> c = persister.getMappedClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                Sealed s = f.getAnnotation(Sealed.class);
                if (s != null) {
                    out.add(attribute(persister, keyring, settings, f, s));
                }
                BlindIndexOf b = f.getAnnotation(BlindIndexOf.class);
                if (b != null) {
                    Indexes ix = Indexes.of(persister, settings, f, b);
                    AbstractEntityPersister p = (AbstractEntityPersister) persister;
                    idx.add(new Index(p.getPropertyIndex(f.getName()), p.getPropertyIndex(b.value()), ix.primary()));
                }
            }
        }
        return new SealedAttributes(List.copyOf(out), List.copyOf(idx));
    }

    private static Attribute attribute(EntityPersister persister, Keyring keyring, Map<String, Object> settings, Field f, Sealed s) {
        String where = persister.getEntityName() + "." + f.getName();
        if (f.getType() != String.class) {
            throw new WardException.Binding(where + ": @Sealed takes a String attribute");
        }
        if (!(persister instanceof AbstractEntityPersister p)) {
            throw new WardException.Binding(where + ": an entity persister ward cannot read column names from");
        }
        if (keyring == null) {
            throw new WardException.Binding(where + " is @Sealed but the setting " + WardHibernate.KEYRING + " holds no Keyring");
        }
        int index = p.getPropertyIndex(f.getName());
        int[] bind = new int[s.bind().length];
        String[] bindColumns = new String[bind.length];
        for (int i = 0; i < bind.length; i++) {
            bind[i] = p.getPropertyIndex(s.bind()[i]);
            Type t = p.getPropertyTypes()[bind[i]];
            if (t.isAssociationType() || t.isComponentType() || t.isCollectionType()) {
                throw new WardException.Binding(where + ": binds " + s.bind()[i] + ", which is not a basic attribute (bind its foreign key column's attribute)");
            }
            bindColumns[i] = single(p, bind[i], where);
        }
        String table = p.getTableName();
        Column col = new Column(keyring, table.substring(table.lastIndexOf('.') + 1), single(p, index, where), bindColumns);
        LedgerState ledger = ledger(settings, where);
        if (ledger != null) {
            col = col.checkedBy(ledger);
        }
        return new Attribute(f.getName(), index, col, bind, s.acceptPlaintext());
    }

    /** The verified ledger of the setting {@link WardHibernate#LEDGER}, or null. */
    static LedgerState ledger(Map<String, Object> settings, String where) {
        Object l = settings.get(WardHibernate.LEDGER);
        if (l != null && !(l instanceof LedgerState)) {
            throw new WardException.Binding(where + ": the setting " + WardHibernate.LEDGER + " must hold a verified LedgerState");
        }
        return (LedgerState) l;
    }

    private static String single(AbstractEntityPersister p, int index, String where) {
        String[] cols = p.getPropertyColumnNames(index);
        if (cols.length != 1) {
            throw new WardException.Binding(where + ": an attribute of " + cols.length + " columns");
        }
        return cols[0];
    }
}
