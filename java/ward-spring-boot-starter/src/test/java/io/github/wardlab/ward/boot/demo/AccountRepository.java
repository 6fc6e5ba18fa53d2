package io.github.wardlab.ward.boot.demo;

import org.springframework.data.jpa.repository.JpaRepository;

/** The accounts table. */
public interface AccountRepository extends JpaRepository<Account, String> {}
