package io.github.wardlab.ward.password;

/**
 * A parsed hash: its parameters, salt and expected output, and what its
 * format needs to recompute it.
 *
 * @param params the scheme and parameters
 * @param format the encoding: phc, bcrypt, passlib, django, spring-…, or a key-bearing form
 * @param salt the salt as the scheme takes it
 * @param hash the expected output (a key-bearing hash's verifier)
 * @param bcrypt the whole bcrypt string, for bcrypt
 * @param pepper the keyring key ID the input was peppered with, or -1
 * @param sha256Prehash the password is first replaced by hex(SHA-256(password)) (Django's bcrypt_sha256)
 * @param kek a key-bearing hash ($ward-argon2id-kek$, $ward-pbkdf2-sha256-kek$)
 */
record Decoded(Params params, String format, byte[] salt, byte[] hash, String bcrypt, long pepper,
        boolean sha256Prehash, boolean kek) {}
