package io.github.wardlab.ward.boot.demo;

import io.github.wardlab.ward.hibernate.Sealed;
import jakarta.persistence.CheckConstraint;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.util.UUID;

/**
 * A chat message as the field report's service kept it, its body sealed
 * and bound to its row, conversation and author; the CHECK refuses
 * plaintext from writes that bypass Hibernate's events (bulk HQL, native
 * SQL): WardHibernate.checkCondition("body").
 */
@Entity
@Table(name = "messages", check = @CheckConstraint(name = "messages_body_sealed",
        constraint = "body IS NULL OR body LIKE 'w3:%' OR body LIKE 'w4:%'"))
public class Message {
    @Id
    UUID id;

    @Column(name = "conversation_id")
    long conversationId;

    @Column(name = "author")
    String author;

    @Sealed(bind = {"conversationId", "author"})
    @Column(length = 4000)
    String body;

    protected Message() {}

    /** A new message with an id of its own (ward binds the value to it before the insert). */
    public Message(long conversationId, String author, String body) {
        this.id = UUID.randomUUID();
        this.conversationId = conversationId;
        this.author = author;
        this.body = body;
    }

    /** The message's id. */
    public UUID id() {
        return id;
    }

    /** The plaintext body. */
    public String body() {
        return body;
    }
}
