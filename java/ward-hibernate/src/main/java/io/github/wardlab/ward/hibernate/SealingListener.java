package io.github.wardlab.ward.hibernate;

import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.WardException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.hibernate.engine.spi.EntityEntry;
import org.hibernate.engine.spi.SharedSessionContractImplementor;
import org.hibernate.event.spi.PostInsertEvent;
import org.hibernate.event.spi.PostInsertEventListener;
import org.hibernate.event.spi.PostLoadEvent;
import org.hibernate.event.spi.PostLoadEventListener;
import org.hibernate.event.spi.PostUpdateEvent;
import org.hibernate.event.spi.PostUpdateEventListener;
import org.hibernate.event.spi.PreInsertEvent;
import org.hibernate.event.spi.PreInsertEventListener;
import org.hibernate.event.spi.PreUpdateEvent;
import org.hibernate.event.spi.PreUpdateEventListener;
import org.hibernate.persister.entity.EntityPersister;

/**
 * Seals {@link Sealed} attributes in the state Hibernate writes (insert and
 * update, after the id is known) and opens them on load; the entity keeps
 * the plaintext throughout, and the persistence context's snapshot is put
 * back to it after each write, so that a flush with nothing changed writes
 * nothing.
 */
final class SealingListener implements PreInsertEventListener, PreUpdateEventListener, PostInsertEventListener,
        PostUpdateEventListener, PostLoadEventListener {
    private static final long serialVersionUID = 1L;

    private final transient Keyring keyring;
    private final transient Map<String, Object> settings;
    private final transient Map<String, SealedAttributes> entities = new ConcurrentHashMap<>();

    SealingListener(Keyring keyring, Map<String, Object> settings) {
        this.keyring = keyring;
        this.settings = settings;
    }

    private SealedAttributes of(EntityPersister p) {
        return entities.computeIfAbsent(p.getEntityName(), n -> SealedAttributes.of(p, keyring, settings));
    }

    @Override
    public boolean onPreInsert(PreInsertEvent e) {
        seal(e.getPersister(), e.getId(), e.getState());
        return false;
    }

    @Override
    public boolean onPreUpdate(PreUpdateEvent e) {
        seal(e.getPersister(), e.getId(), e.getState());
        return false;
    }

    private void seal(EntityPersister p, Object id, Object[] state) {
        SealedAttributes s = of(p);
        if (s.isEmpty()) {
            return;
        }
        for (SealedAttributes.Index x : s.indexes) { // from the plaintext, before it is sealed
            Object v = state[x.source()];
            state[x.index()] = v == null ? null : x.primary().compute((String) v);
        }
        if (id == null && !s.attributes.isEmpty()) {
            throw new WardException.Binding(p.getEntityName() + ": a sealed value needs the row's id before the insert (assigned, UUID or sequence ids, not IDENTITY)");
        }
        for (SealedAttributes.Attribute a : s.attributes) {
            if (state[a.index()] != null) {
                state[a.index()] = a.column().sealText((String) state[a.index()], rowKey(id), bound(a, state));
            }
        }
    }

    @Override
    public void onPostInsert(PostInsertEvent e) {
        restore(e.getPersister(), e.getEntity(), e.getState(), e.getSession());
    }

    @Override
    public void onPostUpdate(PostUpdateEvent e) {
        restore(e.getPersister(), e.getEntity(), e.getState(), e.getSession());
    }

    /**
     * Puts the plaintext back into the snapshot the next flush compares
     * with, and the indexes written into the entity and the snapshot.
     */
    private void restore(EntityPersister p, Object entity, Object[] written, SharedSessionContractImplementor session) {
        SealedAttributes s = of(p);
        if (s.isEmpty()) {
            return;
        }
        for (SealedAttributes.Index x : s.indexes) {
            p.setValue(entity, x.index(), written[x.index()]);
        }
        EntityEntry entry = session.getPersistenceContextInternal().getEntry(entity);
        Object[] loaded = entry == null ? null : entry.getLoadedState();
        if (loaded == null) {
            return;
        }
        for (SealedAttributes.Attribute a : s.attributes) {
            loaded[a.index()] = p.getValue(entity, a.index());
        }
        for (SealedAttributes.Index x : s.indexes) {
            loaded[x.index()] = written[x.index()];
        }
    }

    @Override
    public void onPostLoad(PostLoadEvent e) {
        EntityPersister p = e.getPersister();
        SealedAttributes s = of(p);
        if (s.isEmpty()) {
            return;
        }
        Object entity = e.getEntity();
        EntityEntry entry = e.getSession().getPersistenceContextInternal().getEntry(entity);
        Object[] loaded = entry == null ? null : entry.getLoadedState();
        Object[] state = p.getValues(entity);
        for (SealedAttributes.Attribute a : s.attributes) {
            String stored = (String) state[a.index()];
            if (stored == null || (a.acceptPlaintext() && !looksSealed(stored))) {
                continue;
            }
            String pt = a.column().openText(stored, rowKey(e.getId()), bound(a, state));
            p.setValue(entity, a.index(), pt);
            if (loaded != null) {
                loaded[a.index()] = pt;
            }
        }
    }

    /** Whether a stored value has ward's text form's prefix (w3:, w4:). */
    static boolean looksSealed(String v) {
        return v.length() > 3 && v.charAt(0) == 'w' && v.charAt(1) >= '1' && v.charAt(1) <= '9' && v.charAt(2) == ':';
    }

    private static Object[] bound(SealedAttributes.Attribute a, Object[] state) {
        Object[] out = new Object[a.bind().length];
        for (int i = 0; i < out.length; i++) {
            out[i] = state[a.bind()[i]];
        }
        return out;
    }

    /** The row key of an id: integers and strings as they are, anything else as its text. */
    private static Object rowKey(Object id) {
        return id instanceof Number || id instanceof String || id instanceof java.util.UUID ? id : id.toString();
    }

    @Override
    public boolean requiresPostCommitHandling(EntityPersister persister) {
        return false;
    }
}
