// AesGcmBench times AES-GCM in the JVM as the field report on encrypting
// chat messages did: javax.crypto "AES/GCM/NoPadding", a 128-bit key, a
// fresh 12-byte IV per encryption. The report warmed up with 10
// encryptions, which leaves the JIT half-way (its first test was 20x off);
// here each size is warmed up in rounds of OPS encryptions until two
// rounds agree within 10% and WARM_MS have passed (at most a minute), so
// that the intrinsics under test are compiled in, then timed in ROUNDS
// rounds. It prints, as JSON, the MB/s of every timed round.
//
// Two rounds that agree are not enough for large buffers: HotSpot compiles
// GCM's bulk path only after enough calls, and 1 MiB calls come too slowly
// to get there (they stay at ~60 MB/s for minutes, then jump 50x: the
// report's "20x" first test). So every run first encrypts 128 KiB buffers,
// whose calls come fast enough, for 1,500 calls or 3 seconds.
// Usage: java AesGcmBench ROUNDS WARM_MS SIZE:OPS[,SIZE:OPS...]
import java.security.SecureRandom;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public class AesGcmBench {
    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        long warmNanos = Long.parseLong(args[1]) * 1_000_000L;
        SecureRandom rnd = new SecureRandom();
        byte[] key = new byte[16];
        rnd.nextBytes(key);
        SecretKeySpec k = new SecretKeySpec(key, "AES");
        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
        jitWarmup(c, k, rnd);
        StringBuilder out = new StringBuilder("[");
        String[] cases = args[2].split(",");
        for (int ci = 0; ci < cases.length; ci++) {
            String[] p = cases[ci].split(":");
            int size = Integer.parseInt(p[0]), ops = Integer.parseInt(p[1]);
            byte[] data = new byte[size];
            rnd.nextBytes(data);
            byte[] iv = new byte[12];
            long begin = System.nanoTime();
            double prev = -1;
            while (true) { // warm-up until steady
                double mbps = round(c, k, rnd, data, iv, ops);
                long elapsed = System.nanoTime() - begin;
                if ((prev > 0 && Math.abs(mbps - prev) < 0.1 * prev && elapsed >= warmNanos) || elapsed > 60_000_000_000L) break;
                prev = mbps;
            }
            out.append(ci > 0 ? "," : "").append("{\"size\":").append(size).append(",\"mbps\":[");
            for (int r = 0; r < rounds; r++) {
                out.append(r > 0 ? "," : "").append(round(c, k, rnd, data, iv, ops));
            }
            out.append("]}");
        }
        System.out.println(out.append("]"));
    }

    // jitWarmup gets the bulk path compiled (see the class comment).
    static void jitWarmup(Cipher c, SecretKeySpec k, SecureRandom rnd) throws Exception {
        byte[] data = new byte[128 << 10], iv = new byte[12];
        long begin = System.nanoTime();
        for (int i = 0; i < 1500 && System.nanoTime() - begin < 3_000_000_000L; i += 50) {
            round(c, k, rnd, data, iv, 50);
        }
    }

    // round encrypts data ops times, each with a fresh IV, and returns MB/s.
    static double round(Cipher c, SecretKeySpec k, SecureRandom rnd, byte[] data, byte[] iv, int ops) throws Exception {
        long start = System.nanoTime();
        for (int i = 0; i < ops; i++) {
            rnd.nextBytes(iv);
            c.init(Cipher.ENCRYPT_MODE, k, new GCMParameterSpec(128, iv));
            c.doFinal(data);
        }
        return (double) data.length * ops / ((System.nanoTime() - start) / 1e9) / 1e6;
    }
}
