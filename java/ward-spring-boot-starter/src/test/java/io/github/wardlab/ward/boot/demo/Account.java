package io.github.wardlab.ward.boot.demo;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A user and the stored hash of their password. */
@Entity
@Table(name = "accounts")
public class Account {
    @Id
    String username;

    @Column(name = "password_hash", length = 512)
    String passwordHash;

    protected Account() {}

    /** An account with a stored hash. */
    public Account(String username, String passwordHash) {
        this.username = username;
        this.passwordHash = passwordHash;
    }

    /** The stored hash. */
    public String passwordHash() {
        return passwordHash;
    }
}
