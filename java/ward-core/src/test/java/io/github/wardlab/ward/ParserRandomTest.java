package io.github.wardlab.ward;

import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Every parser on random and mutated input (a seeded, bounded stand-in for
 * a fuzzer): a {@link WardException} or a result, never another exception.
 */
class ParserRandomTest {
    static final int ROUNDS = 20_000;

    interface Parser {
        void parse(byte[] in);
    }

    static void holds(String what, Parser p, byte[] in) {
        try {
            p.parse(in);
        } catch (WardException e) {
            // a typed refusal
        } catch (RuntimeException e) {
            fail(what + " threw " + e + " on " + Wire.hex(in));
        }
    }

    @Test
    void ciphertextsColumnsAndTextForms() throws Exception {
        Keyring kr = ColumnTest.keyring();
        Column col = new Column(kr, "messages", "body", "owner");
        byte[] seed = col.seal("a value".getBytes(StandardCharsets.UTF_8), 1L, "alice");
        String text = Ciphertext.toText(seed);
        Random rnd = new Random(1);
        for (int i = 0; i < ROUNDS; i++) {
            byte[] in = mutate(rnd, rnd.nextBoolean() ? seed : text.getBytes(StandardCharsets.US_ASCII));
            holds("Column.open", b -> col.open(b, 1L, "alice"), in);
            holds("Ciphertext.fromText", b -> Ciphertext.fromText(new String(b, StandardCharsets.ISO_8859_1)), in);
            holds("Keyring.open", b -> kr.open(b, new byte[0], new byte[0]), in);
        }
    }

    @Test
    void keyringFiles() throws Exception {
        byte[] seed = Vectors.JSON.writeValueAsBytes(Vectors.read("field/testdata/context-v4.json").get("keyring"));
        MasterKey mk = MasterKey.parse(Vectors.read("field/testdata/context-v4.json").get("master_key").asText());
        Random rnd = new Random(2);
        for (int i = 0; i < ROUNDS / 10; i++) {
            holds("Keyring.parse", b -> Keyring.parse(b, mk), mutate(rnd, seed));
        }
    }

    @Test
    void grantFiles() throws Exception {
        JsonNode v = Vectors.read("keyring/testdata/grant-v1.json");
        byte[] seed = Vectors.JSON.writeValueAsBytes(v.get("grant"));
        MasterKey mk = MasterKey.parse(v.get("reader_master_key").asText());
        Random rnd = new Random(3);
        for (int i = 0; i < ROUNDS / 10; i++) {
            holds("Grant.parse", b -> Grant.parse(b, mk), mutate(rnd, seed));
        }
    }

    /** Subject grants, and a key row's scoped column (GrantSubjects). */
    @Test
    void subjectGrantsAndScopedWraps() throws Exception {
        JsonNode v = Vectors.read("field/subject/testdata/subject-v4.json");
        byte[] seed = Vectors.JSON.writeValueAsBytes(v.get("subject_grant_alice"));
        byte[] scoped = Vectors.hex(Vectors.read("field/subject/testdata/grant-subject-v1.json").get("keys").get(0).get("scoped_hex").asText());
        Random rnd = new Random(4);
        for (int i = 0; i < ROUNDS / 10; i++) {
            holds("SubjectGrant.parse", SubjectGrant::parse, mutate(rnd, seed));
            holds("GrantSubjects.scoped", GrantSubjects::scoped, mutate(rnd, scoped));
        }
    }

    /** seed with a few bytes changed, cut or grown, or random bytes. */
    @Test
    void forgetJournalLines() throws Exception {
        JsonNode v = Vectors.read("forgetlog/testdata/vectors.json");
        ForgetJournal.Keys keys = ForgetJournalTest.keys(v, v.get("epoch").asLong());
        JournalRecords.Checker checker = new JournalRecords.Checker() {
            public byte[] macKey(JournalRecords.Rec r) {
                return r.chained() ? keys.at(r.epoch()) : keys.mac();
            }

            public boolean ended(long epoch) {
                return epoch % 2 == 0;
            }
        };
        JournalRecords recs = new JournalRecords("db-0123456789abcdef", checker);
        Random rnd = new Random(5);
        JsonNode records = v.get("records");
        for (int i = 0; i < ROUNDS; i++) {
            byte[] in = mutate(rnd, records.get(rnd.nextInt(records.size())).get("line").asText().getBytes(StandardCharsets.UTF_8));
            byte[] line = java.util.Arrays.copyOf(in, in.length + 1);
            line[in.length] = '\n';
            holds("JournalRecords.add", b -> recs.add(b, b.length), line);
            int n = i % 7;
            holds("JournalRecords.committed", b -> recs.committed("7573657273", new Tally(n, 0, n == 0 ? null : new byte[32])), line);
        }
    }

    static byte[] mutate(Random rnd, byte[] seed) {
        if (rnd.nextInt(8) == 0) {
            byte[] b = new byte[rnd.nextInt(64)];
            rnd.nextBytes(b);
            return b;
        }
        byte[] b = java.util.Arrays.copyOf(seed, Math.max(0, seed.length + rnd.nextInt(9) - 6));
        for (int k = rnd.nextInt(3); k >= 0 && b.length > 0; k--) {
            b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
        }
        return b;
    }
}
