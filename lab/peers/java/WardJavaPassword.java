// WardJavaPassword times password hashing on the field report's own JVM
// stack: Spring Security's Argon2PasswordEncoder at its v5.8 defaults (the
// report's encoder: m=16384 KiB, t=2, p=1) beside ward-java's
// WardPasswordEncoder at the same parameters and at ward's default preset
// (OWASP's m=19456 KiB, t=2, p=1), and the log-in of a user whose stored
// hash Spring wrote: ward's matches() on it, and its upgradeEncoding().
// The cases are interleaved within each round, in a rotating order, so a
// noisy neighbour touches them alike. It prints, as JSON, milliseconds per
// operation, then rounds of 10 concurrent encodes of each encoder at the
// report's parameters (its "10 concurrent sign-ups").
// Usage: java -cp "$WARD_JAVA_CLASSPATH:." WardJavaPassword WARM ROUNDS
import io.github.wardlab.ward.password.Params;
import io.github.wardlab.ward.password.Policy;
import io.github.wardlab.ward.spring.WardPasswordEncoder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;
import org.springframework.security.crypto.argon2.Argon2PasswordEncoder;
import org.springframework.security.crypto.password.PasswordEncoder;

public class WardJavaPassword {
    static final String PW = "correct horse battery staple";

    static double ms(long start) {
        return (System.nanoTime() - start) / 1e6;
    }

    static double time(Supplier<Object> op) {
        long t = System.nanoTime();
        Object r = op.get();
        double d = ms(t);
        if (r == null || Boolean.FALSE.equals(r)) {
            throw new IllegalStateException("a case failed its own check");
        }
        return d;
    }

    static double burst(ExecutorService pool, PasswordEncoder enc) throws Exception {
        long t = System.nanoTime();
        List<Future<String>> fs = new ArrayList<>();
        for (int i = 0; i < 10; i++) fs.add(pool.submit(() -> enc.encode(PW)));
        for (Future<String> f : fs) f.get();
        return ms(t);
    }

    static String json(List<Double> v) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < v.size(); i++) b.append(i > 0 ? "," : "").append(v.get(i));
        return b.append("]").toString();
    }

    public static void main(String[] args) throws Exception {
        int warm = Integer.parseInt(args[0]), rounds = Integer.parseInt(args[1]);
        PasswordEncoder spring = Argon2PasswordEncoder.defaultsForSpringSecurity_v5_8();
        PasswordEncoder wardSame = new WardPasswordEncoder(Policy.defaults().withPreferred(Params.springV58(), true));
        PasswordEncoder ward = new WardPasswordEncoder();
        String stored = spring.encode(PW); // a user signed up before ward
        Map<String, Supplier<Object>> cases = new LinkedHashMap<>();
        cases.put("spring_encode_ms", () -> spring.encode(PW));
        cases.put("ward_encode_same_ms", () -> wardSame.encode(PW));
        cases.put("ward_encode_ms", () -> ward.encode(PW));
        cases.put("spring_matches_ms", () -> spring.matches(PW, stored));
        cases.put("ward_matches_spring_hash_ms", () -> ward.matches(PW, stored) && ward.upgradeEncoding(stored));
        List<String> names = new ArrayList<>(cases.keySet());
        for (int i = 0; i < 3; i++) for (String n : names) time(cases.get(n)); // warm-up
        Map<String, List<Double>> out = new LinkedHashMap<>();
        for (String n : names) out.put(n, new ArrayList<>());
        for (int i = 0; i < warm; i++) {
            for (int j = 0; j < names.size(); j++) {
                String n = names.get((i + j) % names.size());
                out.get(n).add(time(cases.get(n)));
            }
        }
        ExecutorService pool = Executors.newFixedThreadPool(10);
        List<Double> bs = new ArrayList<>(), bw = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            boolean springFirst = r % 2 == 0;
            double a = burst(pool, springFirst ? spring : wardSame), b = burst(pool, springFirst ? wardSame : spring);
            bs.add(springFirst ? a : b);
            bw.add(springFirst ? b : a);
        }
        pool.shutdown();
        out.put("spring_burst10_ms", bs);
        out.put("ward_burst10_same_ms", bw);
        StringBuilder s = new StringBuilder("{");
        for (Map.Entry<String, List<Double>> e : out.entrySet()) {
            s.append(s.length() > 1 ? "," : "").append('"').append(e.getKey()).append("\":").append(json(e.getValue()));
        }
        System.out.println(s.append("}"));
    }
}
