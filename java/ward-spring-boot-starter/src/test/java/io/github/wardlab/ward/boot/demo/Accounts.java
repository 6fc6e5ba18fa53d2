package io.github.wardlab.ward.boot.demo;

import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetails;
import org.springframework.security.core.userdetails.UserDetailsPasswordService;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.core.userdetails.UsernameNotFoundException;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** Users for Spring Security, and where it stores a re-hashed password after a log-in. */
@Service
public class Accounts implements UserDetailsService, UserDetailsPasswordService {
    private final AccountRepository repo;

    Accounts(AccountRepository repo) {
        this.repo = repo;
    }

    @Override
    public UserDetails loadUserByUsername(String username) {
        Account a = repo.findById(username).orElseThrow(() -> new UsernameNotFoundException("no such user"));
        return User.withUsername(a.username).password(a.passwordHash).roles("USER").build();
    }

    @Override
    @Transactional
    public UserDetails updatePassword(UserDetails user, String newPassword) {
        Account a = repo.findById(user.getUsername()).orElseThrow(() -> new UsernameNotFoundException("no such user"));
        a.passwordHash = newPassword;
        return User.withUserDetails(user).password(newPassword).build();
    }
}
