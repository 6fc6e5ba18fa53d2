// Argon2Bench times Argon2id through BouncyCastle's Argon2BytesGenerator,
// the engine of Spring Security's Argon2PasswordEncoder that the field
// report on a fast Argon2 encoder measured, at its parameters (m=16384 KiB,
// t=2, p=1, 32-byte hash, 16-byte salt). It prints, as JSON: the first
// hash of this fresh JVM (cold), then warm hashes, then rounds of 10
// concurrent hashes (the report's "10 concurrent sign-ups").
// Usage: java -cp bcprov.jar:. Argon2Bench WARM ROUNDS
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.bouncycastle.crypto.generators.Argon2BytesGenerator;
import org.bouncycastle.crypto.params.Argon2Parameters;

public class Argon2Bench {
    static final SecureRandom RND = new SecureRandom();

    static byte[] hash(byte[] password) {
        byte[] salt = new byte[16];
        RND.nextBytes(salt);
        Argon2Parameters p = new Argon2Parameters.Builder(Argon2Parameters.ARGON2_id)
            .withVersion(Argon2Parameters.ARGON2_VERSION_13).withSalt(salt)
            .withMemoryAsKB(16384).withIterations(2).withParallelism(1).build();
        Argon2BytesGenerator g = new Argon2BytesGenerator();
        g.init(p);
        byte[] out = new byte[32];
        g.generateBytes(password, out);
        return out;
    }

    static double ms(long start) { return (System.nanoTime() - start) / 1e6; }

    public static void main(String[] args) throws Exception {
        int warm = Integer.parseInt(args[0]), rounds = Integer.parseInt(args[1]);
        byte[] pw = "correct horse battery staple".getBytes("UTF-8");
        long t = System.nanoTime();
        hash(pw);
        double first = ms(t);
        for (int i = 0; i < 3; i++) hash(pw); // warm-up
        StringBuilder out = new StringBuilder("{\"first_ms\":" + first + ",\"warm_ms\":[");
        for (int i = 0; i < warm; i++) {
            t = System.nanoTime();
            hash(pw);
            out.append(i > 0 ? "," : "").append(ms(t));
        }
        out.append("],\"burst10_ms\":[");
        ExecutorService pool = Executors.newFixedThreadPool(10);
        for (int r = 0; r < rounds; r++) {
            t = System.nanoTime();
            List<Future<byte[]>> fs = new ArrayList<>();
            for (int i = 0; i < 10; i++) fs.add(pool.submit(() -> hash(pw)));
            for (Future<byte[]> f : fs) f.get();
            out.append(r > 0 ? "," : "").append(ms(t));
        }
        pool.shutdown();
        System.out.println(out.append("]}"));
    }
}
