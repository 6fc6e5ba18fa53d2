package io.github.wardlab.ward.hibernate;

import jakarta.persistence.CheckConstraint;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** The test entities: a chat message as the field report's service kept it, and two variants. */
final class Entities {
    private Entities() {}

    /** A message, its body sealed and bound to its conversation, owner and role. */
    @Entity(name = "Message")
    @Table(name = "messages", check = @CheckConstraint(name = "messages_body_sealed",
            constraint = "body IS NULL OR body LIKE 'w3:%' OR body LIKE 'w4:%'")) // WardHibernate.checkCondition("body")
    public static class Message {
        @Id
        Long id;

        @Column(name = "conversation_id")
        Long conversationId;

        @Column(name = "user_id")
        Long userId;

        String role;

        @Sealed(bind = {"conversationId", "userId", "role"})
        @Column(length = 4000)
        String body;

        protected Message() {}

        Message(long id, long conversation, long user, String role, String body) {
            this.id = id;
            this.conversationId = conversation;
            this.userId = user;
            this.role = role;
            this.body = body;
        }
    }

    /** A note whose column is moving from plaintext: old rows load as they are. */
    @Entity(name = "Note")
    @Table(name = "notes")
    public static class Note {
        @Id
        Long id;

        @Sealed(acceptPlaintext = true)
        @Column(length = 4000)
        String text;

        protected Note() {}

        Note(long id, String text) {
            this.id = id;
            this.text = text;
        }
    }

    /** An IDENTITY id: unknown before the insert, so nothing can be bound to it. */
    @Entity(name = "Ticket")
    @Table(name = "tickets")
    public static class Ticket {
        @Id
        @GeneratedValue(strategy = GenerationType.IDENTITY)
        Long id;

        @Sealed
        String subject;

        protected Ticket() {}

        Ticket(String subject) {
            this.subject = subject;
        }
    }

    /** An account found by its email: the email sealed, its blind index (folded) beside it. */
    @Entity(name = "Account")
    @Table(name = "accounts")
    public static class Account {
        @Id
        Long id;

        @Sealed
        @Column(length = 4000)
        String email;

        @BlindIndexOf(value = "email", normalizer = "fold")
        @Column(name = "email_idx", length = 64)
        byte[] emailIdx;

        protected Account() {}

        Account(long id, String email) {
            this.id = id;
            this.email = email;
        }
    }
}
