package io.github.wardlab.ward.boot.demo;

import java.util.UUID;
import org.springframework.data.jpa.repository.JpaRepository;
import org.springframework.data.jpa.repository.Modifying;
import org.springframework.data.jpa.repository.Query;
import org.springframework.data.repository.query.Param;
import org.springframework.transaction.annotation.Transactional;

/** The messages table. */
public interface MessageRepository extends JpaRepository<Message, UUID> {
    /** A bulk update: it bypasses Hibernate's events, so the CHECK is what refuses its plaintext. */
    @Modifying
    @Transactional
    @Query("update Message m set m.body = :body where m.conversationId = :conversation")
    int overwriteBodies(@Param("conversation") long conversation, @Param("body") String body);
}
