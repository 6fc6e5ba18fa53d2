package io.github.wardlab.ward.boot;

import io.github.wardlab.ward.FleetMember;
import io.github.wardlab.ward.Ledger;
import io.github.wardlab.ward.LedgerState;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.hibernate.WardHibernate;
import io.github.wardlab.ward.hibernate.WardIntegrator;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import jakarta.persistence.EntityManagerFactory;
import javax.sql.DataSource;
import org.hibernate.SessionFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.hibernate.autoconfigure.HibernatePropertiesCustomizer;
import org.springframework.context.annotation.Bean;

/**
 * Spring Boot auto-configuration of ward's sealed JPA columns: with
 * {@code ward.keyring} set, the keyring is opened at start (a missing
 * file, another master key or a damaged file fails the start, naming the
 * fault but never a key) and handed to ward's Hibernate integration
 * ({@link WardIntegrator}, which Hibernate loads itself), so every
 * {@code @Sealed} attribute is sealed on write, bound to its row, and
 * opened on load.
 */
@AutoConfiguration
@ConditionalOnClass({WardIntegrator.class, HibernatePropertiesCustomizer.class})
@ConditionalOnProperty("ward.keyring")
@EnableConfigurationProperties(WardProperties.class)
public class WardJpaAutoConfiguration {
    /** The auto-configuration Spring Boot instantiates. */
    public WardJpaAutoConfiguration() {}

    /** The keyring of {@code ward.keyring}, unless the application defines its own. */
    @Bean
    @ConditionalOnMissingBean(Keyring.class)
    public Keyring wardKeyring(WardProperties props) {
        return keyring(props, System.getenv());
    }

    /**
     * Puts the keyring where ward's Hibernate integration reads it, with
     * the database's ID and, with {@code ward.verify-ledger}, the ledger
     * verified on one of the DataSource's connections.
     */
    @Bean
    public HibernatePropertiesCustomizer wardHibernateProperties(Keyring keyring, WardProperties props, ObjectProvider<DataSource> dataSource) {
        return properties -> {
            properties.put(WardHibernate.KEYRING, keyring);
            if (props.getDatabase() != null && !props.getDatabase().isEmpty()) {
                properties.put(WardHibernate.DATABASE, props.getDatabase());
            }
            if (props.isVerifyLedger()) {
                properties.put(WardHibernate.LEDGER, verify(dataSource.getIfAvailable(), keyring, props.getLedgerTable()));
            }
        };
    }

    /**
     * With {@code ward.fleet.join}, this process's registration in the
     * DataSource's process registry (a verified ledger required), with
     * ward-java's forms, one per {@code @Sealed} attribute of the
     * application's entities and {@code ward.fleet.forms}; it leaves when
     * the context closes (a SIGTERM's shutdown hook included).
     * Heartbeat failures are logged without any key or value.
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnProperty("ward.fleet.join")
    public FleetMember wardFleetMember(Keyring keyring, WardProperties props, ObjectProvider<DataSource> dataSource,
            ObjectProvider<EntityManagerFactory> emf) {
        DataSource ds = dataSource.getIfAvailable();
        if (ds == null) {
            throw new IllegalStateException("ward.fleet.join needs the application's DataSource");
        }
        List<String> forms = new ArrayList<>(props.getFleet().getForms());
        EntityManagerFactory f = emf.getIfAvailable();
        if (f != null) {
            forms.addAll(WardHibernate.forms(f.unwrap(SessionFactory.class)));
        }
        System.Logger log = System.getLogger(WardJpaAutoConfiguration.class.getName());
        return FleetMember.join(ds, keyring, props.getFleet().getTable(), props.getLedgerTable(), forms, FleetMember.DEFAULT_HEARTBEAT,
                e -> log.log(System.Logger.Level.WARNING, "ward fleet heartbeat: " + e.getClass().getSimpleName() + ": " + e.getMessage()));
    }

    /** The ledger of the DataSource's database, verified; a typed error (the start fails) otherwise. */
    static LedgerState verify(DataSource ds, Keyring keyring, String table) {
        if (ds == null) {
            throw new IllegalStateException("ward.verify-ledger needs the application's DataSource");
        }
        try (Connection c = ds.getConnection()) {
            return Ledger.verify(c, keyring, table, false);
        } catch (SQLException e) {
            throw new IllegalStateException("ward.verify-ledger: no connection to the database: SQLSTATE " + e.getSQLState());
        }
    }

    /** The keyring the properties name; env is the process's environment. */
    static Keyring keyring(WardProperties props, Map<String, String> env) {
        return Keyring.load(Path.of(props.getKeyring()), MasterKey.resolve(props.getMasterKeyFile(), env));
    }
}
