// WardJavaBench measures ward's JVM core (java/ward-core) per value, as
// the Python package's benchmark (python3 -m ward.bench) measures that
// package: it seals and opens messages.body of row 123456 (ciphertext v4
// under the keyring's primary)
// beside raw AES-GCM from the same JDK (java/ward-lab's JdkAesGcm:
// javax.crypto "AES/GCM/NoPadding", a fresh 12-byte IV from SecureRandom,
// the value carrying its IV as the Go lab's raw case does), in interleaved rounds timed by the thread's CPU
// time, after a warm-up long enough for HotSpot to compile both paths.
// Prints JSON: nanoseconds per value per round.
// Usage: java -cp WARD_JAVA_CLASSPATH:. WardJavaBench KEYRING MASTER_KEY_FILE SIZE ROUNDS PER_ROUND WARM_MS
import io.github.wardlab.ward.Column;
import io.github.wardlab.ward.Keyring;
import io.github.wardlab.ward.MasterKey;
import io.github.wardlab.ward.bench.JdkAesGcm;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Arrays;

public class WardJavaBench {
    interface Op {
        void run(int n) throws Exception;
    }

    static volatile int sink;

    public static void main(String[] args) throws Exception {
        Keyring kr = Keyring.load(Path.of(args[0]), MasterKey.load(Path.of(args[1])));
        int size = Integer.parseInt(args[2]), rounds = Integer.parseInt(args[3]), n = Integer.parseInt(args[4]);
        Column col = new Column(kr, "messages", "body");
        SecureRandom rnd = new SecureRandom();
        byte[] pt = new byte[size];
        rnd.nextBytes(pt);
        byte[] ct = col.seal(pt, 123456L);
        if (!Arrays.equals(col.open(ct, 123456L), pt)) {
            throw new IllegalStateException("a value did not open to what was sealed");
        }
        JdkAesGcm raw = new JdkAesGcm();
        byte[] stored = raw.seal(pt);
        Op[] ops = {
            m -> { for (int i = 0; i < m; i++) sink += raw.seal(pt).length; },
            m -> { for (int i = 0; i < m; i++) sink += col.seal(pt, 123456L).length; },
            m -> { for (int i = 0; i < m; i++) sink += raw.open(stored).length; },
            m -> { for (int i = 0; i < m; i++) sink += col.open(ct, 123456L).length; },
        };
        long until = System.nanoTime() + Long.parseLong(args[5]) * 1_000_000L; // warm-up: HotSpot's C2 for every op
        while (System.nanoTime() < until) {
            for (Op op : ops) {
                op.run(Math.max(1, n / 10));
            }
        }
        double[][] out = new double[ops.length][rounds];
        ThreadMXBean tm = ManagementFactory.getThreadMXBean();
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < ops.length; j++) {
                int i = r % 2 == 0 ? j : ops.length - 1 - j; // A B, then B A
                long t = tm.getCurrentThreadCpuTime();
                ops[i].run(n);
                out[i][r] = (tm.getCurrentThreadCpuTime() - t) / (double) n;
            }
        }
        System.out.println("{\"alg\":\"" + kr.primary().alg().wardName() + "\",\"size\":" + size
            + ",\"raw_seal_ns\":" + Arrays.toString(out[0]) + ",\"seal_ns\":" + Arrays.toString(out[1])
            + ",\"raw_open_ns\":" + Arrays.toString(out[2]) + ",\"open_ns\":" + Arrays.toString(out[3]) + "}");
    }
}
