package io.github.wardlab.ward.boot;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code ward.*} properties of the sealing auto-configuration
 * ({@link WardJpaAutoConfiguration}); the password encoder's are
 * {@code ward.password.*} (ward-spring-security).
 *
 * <ul>
 *   <li>{@code ward.keyring}: the keyring file whose keys seal the
 *       application's {@code @Sealed} attributes; without it nothing is
 *       configured and an entity with a sealed attribute fails to load or
 *       save;
 *   <li>{@code ward.master-key-file}: the file holding the keyring's local
 *       master key; without it, the environment's {@code WARD_MASTER_KEY}.
 *       Never the key itself as a property: properties are printed by
 *       actuators and kept in configuration repositories.
 * </ul>
 */
@ConfigurationProperties("ward")
public class WardProperties {
    private String keyring;
    private String masterKeyFile;

    /** The keyring file, or null. */
    public String getKeyring() {
        return keyring;
    }

    /** Sets the keyring file. */
    public void setKeyring(String keyring) {
        this.keyring = keyring;
    }

    /** The master key file, or null for WARD_MASTER_KEY. */
    public String getMasterKeyFile() {
        return masterKeyFile;
    }

    /** Sets the master key file. */
    public void setMasterKeyFile(String masterKeyFile) {
        this.masterKeyFile = masterKeyFile;
    }
}
