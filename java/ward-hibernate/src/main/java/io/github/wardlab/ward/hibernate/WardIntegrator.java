package io.github.wardlab.ward.hibernate;

import io.github.wardlab.ward.Keyring;
import org.hibernate.HibernateException;
import org.hibernate.boot.Metadata;
import org.hibernate.boot.spi.BootstrapContext;
import org.hibernate.engine.spi.SessionFactoryImplementor;
import org.hibernate.event.service.spi.EventListenerRegistry;
import org.hibernate.event.spi.EventType;
import org.hibernate.integrator.spi.Integrator;

/**
 * Registers ward's {@link SealingListener} with every session factory
 * (through {@code META-INF/services/org.hibernate.integrator.spi.Integrator}):
 * an application adds the dependency and the {@link WardHibernate#KEYRING}
 * setting, and annotates its sealed attributes.
 */
public final class WardIntegrator implements Integrator {
    /** The integrator Hibernate's service loader instantiates. */
    public WardIntegrator() {}

    @Override
    public void integrate(Metadata metadata, BootstrapContext bootstrapContext, SessionFactoryImplementor sessionFactory) {
        Object kr = sessionFactory.getProperties().get(WardHibernate.KEYRING);
        if (kr != null && !(kr instanceof Keyring)) {
            throw new HibernateException(WardHibernate.KEYRING + " must hold an io.github.wardlab.ward.Keyring");
        }
        SealingListener l = new SealingListener((Keyring) kr, sessionFactory.getProperties());
        EventListenerRegistry r = sessionFactory.getServiceRegistry().requireService(EventListenerRegistry.class);
        r.appendListeners(EventType.PRE_INSERT, l);
        r.appendListeners(EventType.PRE_UPDATE, l);
        r.appendListeners(EventType.POST_INSERT, l);
        r.appendListeners(EventType.POST_UPDATE, l);
        r.appendListeners(EventType.POST_LOAD, l);
    }
}
