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
 *   <li>{@code ward.verify-ledger}: verify the database's keyring ledger at
 *       start ({@code Ledger.verify} on a connection of the application's
 *       DataSource): a ledger that does not verify fails the start, and
 *       every sealed column writes under its rule (v4 once the fleet opened
 *       it, v3 until then); blind indexes take its database ID. On in
 *       production.
 *   <li>{@code ward.ledger-table}: the ledger's table ({@code ward_ledger});
 *   <li>{@code ward.database}: the database's ID for blind indexes, when the
 *       ledger is not verified here;
 *   <li>{@code ward.fleet.join}: register this process in the database's
 *       process registry ({@code FleetMember}) with the keys it holds and
 *       the forms it reads, heartbeaten until the application stops, so a
 *       rotation or a new form waits for it as for a Go process; on in
 *       production with Go processes or the Go CLI's {@code --db};
 *   <li>{@code ward.fleet.forms}: forms it reads besides ward-java's own and
 *       one {@code sealed:TABLE.COLUMN} per {@code @Sealed} attribute (for
 *       example {@code password:argon2id,password:bcrypt} for the hashes
 *       its password encoder reads);
 *   <li>{@code ward.fleet.table}: the registry's table ({@code ward_fleet}).
 * </ul>
 */
@ConfigurationProperties("ward")
public class WardProperties {
    private String keyring;
    private String masterKeyFile;
    private boolean verifyLedger;
    private String ledgerTable = "ward_ledger";
    private String database;
    private final Fleet fleet = new Fleet();

    /** The {@code ward.fleet.*} properties. */
    public static class Fleet {
        private boolean join;
        private java.util.List<String> forms = new java.util.ArrayList<>();
        private String table = "ward_fleet";

        /** Whether the process joins the registry. */
        public boolean isJoin() {
            return join;
        }

        /** Sets whether the process joins the registry. */
        public void setJoin(boolean join) {
            this.join = join;
        }

        /** The forms declared besides ward-java's and the sealed columns'. */
        public java.util.List<String> getForms() {
            return forms;
        }

        /** Sets the forms declared besides ward-java's and the sealed columns'. */
        public void setForms(java.util.List<String> forms) {
            this.forms = forms;
        }

        /** The registry's table. */
        public String getTable() {
            return table;
        }

        /** Sets the registry's table. */
        public void setTable(String table) {
            this.table = table;
        }
    }

    /** The {@code ward.fleet.*} properties. */
    public Fleet getFleet() {
        return fleet;
    }

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

    /** Whether the ledger is verified at start. */
    public boolean isVerifyLedger() {
        return verifyLedger;
    }

    /** Sets whether the ledger is verified at start. */
    public void setVerifyLedger(boolean verifyLedger) {
        this.verifyLedger = verifyLedger;
    }

    /** The ledger's table. */
    public String getLedgerTable() {
        return ledgerTable;
    }

    /** Sets the ledger's table. */
    public void setLedgerTable(String ledgerTable) {
        this.ledgerTable = ledgerTable;
    }

    /** The database's ID for blind indexes, or null. */
    public String getDatabase() {
        return database;
    }

    /** Sets the database's ID for blind indexes. */
    public void setDatabase(String database) {
        this.database = database;
    }
}
