package io.github.wardlab.ward.cli;

/** A command line the CLI cannot run: exit code 2, as the Go CLI's usage errors. */
public final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    /** A usage error with what was wrong. */
    public UsageException(String message) {
        super(message);
    }
}
