package lab.interop;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.redisson.api.RLock;

/**
 * Redisson's side of the lock benchmarks, shaped like the Rust side's (`examples/benches/compare.rs`)
 * so the two can be read against each other: the same lease, the same hold, the same count of
 * workers and locks, measured on the same redis-server.
 */
final class Bench {
    /** Long enough that no benchmark lock expires while held. */
    private static final long LEASE_MS = 10_000;
    /** How long a contended worker holds its lock, as on the Rust side (a sleep, not a spin). */
    private static final long HOLD_MILLIS = 1;

    private Bench() {}

    /** Uncontended lock and unlock pairs on the calling thread for {@code millis}. */
    static String pairs(RLock lock, long millis) {
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(millis);
        long pairs = 0;
        while (System.nanoTime() < deadline) {
            lock.lock(LEASE_MS, TimeUnit.MILLISECONDS);
            lock.unlock();
            pairs++;
        }
        return "ok " + pairs + " " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    /**
     * {@code workers} threads on {@code locks} locks for {@code millis}: each takes a lock picked
     * at random (SplitMix64, seeded by the worker's number, as on the Rust side), holds it 1 ms
     * and gives it back. Only grants within the window count, and a wait still going at its end
     * is given up. Reports grants, the window, and the median and 99th percentile of the acquire
     * latency in microseconds.
     */
    static String contended(IntFunction<RLock> lockAt, int locks, int workers, long millis)
            throws InterruptedException {
        RLock[] all = new RLock[locks];
        for (int i = 0; i < locks; i++) {
            all[i] = lockAt.apply(i);
        }
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(millis);
        long[][] latencies = new long[workers][];
        int[] counts = new int[workers];
        Thread[] threads = new Thread[workers];
        for (int w = 0; w < workers; w++) {
            final int worker = w;
            threads[w] = new Thread(() -> {
                long[] mine = new long[1024];
                int n = 0;
                long picker = worker + 1;
                try {
                    while (true) {
                        picker += 0x9e3779b97f4a7c15L;
                        RLock lock = all[(int) Long.remainderUnsigned(mix(picker), locks)];
                        long asked = System.nanoTime();
                        if (asked >= deadline
                                || !lock.tryLock(deadline - asked, LEASE_MS * 1_000_000L,
                                        TimeUnit.NANOSECONDS)) {
                            break;
                        }
                        long held = System.nanoTime();
                        if (held > deadline) {
                            lock.unlock();
                            break;
                        }
                        if (n == mine.length) {
                            mine = Arrays.copyOf(mine, n * 2);
                        }
                        mine[n++] = (held - asked) / 1000;
                        Thread.sleep(HOLD_MILLIS);
                        lock.unlock();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                latencies[worker] = mine;
                counts[worker] = n;
            }, "bench-" + w);
            threads[w].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        int total = Arrays.stream(counts).sum();
        long[] merged = new long[total];
        int at = 0;
        for (int w = 0; w < workers; w++) {
            System.arraycopy(latencies[w], 0, merged, at, counts[w]);
            at += counts[w];
        }
        Arrays.sort(merged);
        return "ok " + total + " " + millis + " " + percentile(merged, 0.50) + " "
                + percentile(merged, 0.99);
    }

    /** SplitMix64's output function. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    private static long percentile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0;
        }
        int index = (int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
        return sorted[Math.max(index, 0)];
    }
}
