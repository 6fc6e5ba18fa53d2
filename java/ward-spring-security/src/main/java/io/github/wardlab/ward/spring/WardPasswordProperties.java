package io.github.wardlab.ward.spring;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code ward.password.*} properties of the auto-configuration.
 *
 * <ul>
 *   <li>{@code ward.password.preset}: {@code owasp} (the default: Argon2id,
 *       m=19456 KiB, t=2, p=1) or {@code strong} (m=64 MiB, t=3, p=4);
 *   <li>{@code ward.password.keyring}: a keyring file whose primary key
 *       peppers new hashes, opened with the master key in
 *       {@code WARD_MASTER_KEY} or the file {@code ward.password.master-key-file};
 *   <li>{@code ward.password.require-pepper}: refuse unpeppered hashes, so
 *       that a database writer cannot plant a hash of a password they know
 *       (turn it on once every user has logged in since the pepper).
 * </ul>
 */
@ConfigurationProperties("ward.password")
public class WardPasswordProperties {
    private String preset = "owasp";
    private String keyring;
    private String masterKeyFile;
    private boolean requirePepper;

    /** The preset: owasp or strong. */
    public String getPreset() {
        return preset;
    }

    /** Sets the preset. */
    public void setPreset(String preset) {
        this.preset = preset;
    }

    /** The pepper's keyring file, or null. */
    public String getKeyring() {
        return keyring;
    }

    /** Sets the pepper's keyring file. */
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

    /** Whether unpeppered hashes are refused. */
    public boolean isRequirePepper() {
        return requirePepper;
    }

    /** Sets whether unpeppered hashes are refused. */
    public void setRequirePepper(boolean requirePepper) {
        this.requirePepper = requirePepper;
    }
}
