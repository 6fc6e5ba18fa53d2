package io.github.wardlab.ward.hibernate;

import io.github.wardlab.ward.Column;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.WardException;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import org.hibernate.persister.entity.AbstractEntityPersister;
import org.hibernate.persister.entity.EntityPersister;
import org.hibernate.type.Type;

/** An entity's sealed attributes, resolved against its persister once. */
final class SealedAttributes {
    /** One sealed attribute: its index, its column and its bound attributes' indexes. */
    record Attribute(String name, int index, Column column, int[] bind, boolean acceptPlaintext) {}

    final List<Attribute> attributes;

    private SealedAttributes(List<Attribute> attributes) {
        this.attributes = attributes;
    }

    boolean isEmpty() {
        return attributes.isEmpty();
    }

    /** The sealed attributes of the persister's entity class and its superclasses. */
    static SealedAttributes of(EntityPersister persister, Keyring keyring) {
        List<Attribute> out = new ArrayList<>();
        for (Class<?> c = persister.getMappedClass(); c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                Sealed s = f.getAnnotation(Sealed.class);
                if (s != null) {
                    out.add(attribute(persister, keyring, f, s));
                }
            }
        }
        return new SealedAttributes(List.copyOf(out));
    }

    private static Attribute attribute(EntityPersister persister, Keyring keyring, Field f, Sealed s) {
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
        return new Attribute(f.getName(), index, col, bind, s.acceptPlaintext());
    }

    private static String single(AbstractEntityPersister p, int index, String where) {
        String[] cols = p.getPropertyColumnNames(index);
        if (cols.length != 1) {
            throw new WardException.Binding(where + ": an attribute of " + cols.length + " columns");
        }
        return cols[0];
    }
}
