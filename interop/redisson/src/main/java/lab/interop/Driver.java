package lab.interop;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * A Java peer that a test scripts over standard input and output, so that real Redisson contends
 * with the Rust lock for the same keys.
 *
 * <p>Redisson's locks belong to a thread, so every lock command runs on the thread of a named
 * holder, made on first use and kept for the life of the process: the same holder re-enters its
 * own holds, two holders are two owners. Commands of one holder run in order; different holders
 * run at once, so one holder may block in {@code lock} while others go on.
 *
 * <p>Start: {@code java -jar redisson-driver.jar --redis URL [--watchdog-ms MS]
 * [--fair-wait-ms MS]}. The driver prints {@code ready <client id>} once connected. Then one
 * command per line, {@code <tag> <holder> [<kind>] <op> <args>}, answered by one line, {@code <tag>
 * ok [<value>]} or {@code <tag> err <exception class> <message>}, in the order the commands finish.
 * The tag is the caller's, to match answers to commands.
 *
 * <p>The kind picks the Redisson object: none for {@code RLock}, {@code fair} for {@code
 * RFairLock}, {@code fenced} for {@code RFencedLock}, {@code read} and {@code write} for the two
 * halves of {@code RReadWriteLock}, {@code multi} for the multi-lock over plain locks (its name is
 * the comma-separated list of their names). The ops, with times in milliseconds:
 *
 * <ul>
 *   <li>{@code lock NAME [LEASE]}: blocks until held; {@code ok}. Fenced: {@code ok <token>}.
 *   <li>{@code trylock NAME WAIT [LEASE]}: {@code ok true|false}. Fenced: {@code ok <token>|none}.
 *   <li>{@code unlock NAME}, {@code forceunlock NAME} ({@code ok true|false}).
 *   <li>{@code holdcount NAME}, {@code remainttl NAME}, {@code locked NAME}, {@code heldbyme NAME}.
 *   <li>{@code token NAME} (fenced only): the counter's value, {@code none} before any acquire.
 *   <li>{@code owner}: the hash field this holder writes, {@code <client id>:<thread id>}.
 *   <li>{@code bench-pairs NAME MILLIS}: lock and unlock in a loop on this holder; {@code ok <pairs>
 *       <elapsed ms>}.
 *   <li>{@code bench-contended PREFIX LOCKS WORKERS MILLIS}: that many threads lock, hold 1 ms
 *       and unlock a lock picked at random among {@code PREFIX:0..LOCKS-1}; {@code ok <grants>
 *       <window ms> <p50 us> <p99 us>}, the percentiles of the time from asking to holding.
 * </ul>
 *
 * <p>{@code <tag> - quit} (any holder) shuts Redisson down and exits; so does the end of input.
 */
public final class Driver {
    private final RedissonClient redisson;
    private final BufferedWriter out;
    private final Map<String, ExecutorService> holders = new HashMap<>();

    private Driver(RedissonClient redisson, BufferedWriter out) {
        this.redisson = redisson;
        this.out = out;
    }

    /** Reads the options, connects, and serves commands until {@code quit} or end of input. */
    public static void main(String[] args) throws IOException {
        Map<String, String> options = parseOptions(args);
        String url = options.get("--redis");
        if (url == null) {
            System.err.println(
                    "usage: java -jar redisson-driver.jar --redis URL [--watchdog-ms MS] [--fair-wait-ms MS]");
            System.exit(2);
        }
        // Standard error is the test's log: Redisson's warnings belong there, its chatter does not.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        Config config = new Config();
        // A peer of a test opens connections as it needs them: Redisson's default of 24 idle ones
        // (and 32 Netty threads) costs seconds of start-up on a small machine and changes no lock
        // semantics.
        config.useSingleServer()
                .setAddress(url)
                .setConnectionMinimumIdleSize(1)
                .setSubscriptionConnectionMinimumIdleSize(1);
        config.setNettyThreads(4);
        config.setThreads(4);
        if (options.containsKey("--watchdog-ms")) {
            config.setLockWatchdogTimeout(Long.parseLong(options.get("--watchdog-ms")));
        }
        if (options.containsKey("--fair-wait-ms")) {
            config.setFairLockWaitTimeout(Long.parseLong(options.get("--fair-wait-ms")));
        }
        RedissonClient redisson = Redisson.create(config);
        BufferedWriter out =
                new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        Driver driver = new Driver(redisson, out);
        driver.reply("ready", redisson.getId());
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (!driver.dispatch(line)) {
                    break;
                }
            }
        } finally {
            driver.holders.values().forEach(ExecutorService::shutdownNow);
            redisson.shutdown();
        }
        System.exit(0);
    }

    private static Map<String, String> parseOptions(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i], args[i + 1]);
        }
        return options;
    }

    /** Hands one line to its holder's thread; false once the caller asked to quit. */
    private boolean dispatch(String line) {
        String[] words = line.trim().split("\\s+");
        if (words.length == 1 && words[0].isEmpty()) {
            return true;
        }
        if (words.length < 3) {
            reply(words[0], "err Usage expected <tag> <holder> [<kind>] <op> <args>: " + line);
            return true;
        }
        String tag = words[0];
        String holder = words[1];
        List<String> command = new ArrayList<>(Arrays.asList(words).subList(2, words.length));
        if (command.get(0).equals("quit")) {
            reply(tag, "ok");
            return false;
        }
        ExecutorService thread =
                holders.computeIfAbsent(
                        holder,
                        h ->
                                Executors.newSingleThreadExecutor(
                                        runnable -> {
                                            Thread t = new Thread(runnable, "holder-" + h);
                                            t.setDaemon(true);
                                            return t;
                                        }));
        thread.execute(
                () -> {
                    String outcome;
                    try {
                        outcome = run(command);
                    } catch (Throwable e) {
                        // Async paths wrap the exception the caller of a sync method would see.
                        Throwable cause = (e instanceof java.util.concurrent.CompletionException
                                        || e instanceof java.util.concurrent.ExecutionException)
                                        && e.getCause() != null
                                ? e.getCause()
                                : e;
                        String message = String.valueOf(cause.getMessage()).replaceAll("\\s+", " ");
                        outcome = "err " + cause.getClass().getSimpleName() + " " + message;
                    }
                    reply(tag, outcome);
                });
        return true;
    }

    private synchronized void reply(String tag, String outcome) {
        try {
            out.write(tag);
            out.write(' ');
            out.write(outcome);
            out.newLine();
            out.flush();
        } catch (IOException e) {
            // The test went away: nothing is left to tell.
            System.exit(1);
        }
    }

    /** Runs one command on the calling (holder) thread and returns its outcome line. */
    private String run(List<String> command) throws Exception {
        final String kind;
        switch (command.get(0)) {
            case "fair":
            case "fenced":
            case "read":
            case "write":
            case "multi":
                kind = command.remove(0);
                break;
            default:
                kind = "plain";
        }
        String op = command.get(0);
        if (op.equals("owner")) {
            return "ok " + redisson.getId() + ":" + Thread.currentThread().getId();
        }
        String name = argument(command, 1, "NAME");
        switch (op) {
            case "bench-pairs":
                return Bench.pairs(lock(kind, name), millis(command, 2, "MILLIS"));
            case "bench-contended":
                return Bench.contended(
                        index -> lock(kind, name + ":" + index),
                        (int) millis(command, 2, "LOCKS"),
                        (int) millis(command, 3, "WORKERS"),
                        millis(command, 4, "MILLIS"));
            default:
                break;
        }
        RLock lock = lock(kind, name);
        switch (op) {
            case "lock": {
                long lease = optionalMillis(command, 2);
                if (lock instanceof RFencedLock) {
                    RFencedLock fenced = (RFencedLock) lock;
                    Long token = lease > 0
                            ? fenced.lockAndGetToken(lease, TimeUnit.MILLISECONDS)
                            : fenced.lockAndGetToken();
                    return "ok " + token;
                }
                if (lease > 0) {
                    lock.lock(lease, TimeUnit.MILLISECONDS);
                } else {
                    lock.lock();
                }
                return "ok";
            }
            case "trylock": {
                long wait = millis(command, 2, "WAIT");
                long lease = optionalMillis(command, 3);
                if (lock instanceof RFencedLock) {
                    Long token = ((RFencedLock) lock)
                            .tryLockAndGetToken(wait, lease, TimeUnit.MILLISECONDS);
                    return "ok " + (token == null ? "none" : token.toString());
                }
                return "ok " + lock.tryLock(wait, lease, TimeUnit.MILLISECONDS);
            }
            case "unlock":
                lock.unlock();
                return "ok";
            case "forceunlock":
                return "ok " + lock.forceUnlock();
            case "holdcount":
                return "ok " + lock.getHoldCount();
            case "remainttl":
                return "ok " + lock.remainTimeToLive();
            case "locked":
                return "ok " + lock.isLocked();
            case "heldbyme":
                return "ok " + lock.isHeldByCurrentThread();
            case "token":
                if (!(lock instanceof RFencedLock)) {
                    throw new IllegalArgumentException("token needs the fenced kind");
                }
                Long token = ((RFencedLock) lock).getToken();
                return "ok " + (token == null ? "none" : token.toString());
            default:
                throw new IllegalArgumentException("unknown op '" + op + "'");
        }
    }

    /** The Redisson object that a kind and a name stand for. */
    private RLock lock(String kind, String name) {
        switch (kind) {
            case "fair":
                return redisson.getFairLock(name);
            case "fenced":
                return redisson.getFencedLock(name);
            case "read":
                return redisson.getReadWriteLock(name).readLock();
            case "write":
                return redisson.getReadWriteLock(name).writeLock();
            case "multi": {
                String[] names = name.split(",");
                RLock[] locks = new RLock[names.length];
                for (int i = 0; i < names.length; i++) {
                    locks[i] = redisson.getLock(names[i]);
                }
                return redisson.getMultiLock(locks);
            }
            default:
                return redisson.getLock(name);
        }
    }

    private static String argument(List<String> command, int index, String what) {
        if (index >= command.size()) {
            throw new IllegalArgumentException(command.get(0) + " needs " + what);
        }
        return command.get(index);
    }

    private static long millis(List<String> command, int index, String what) {
        return Long.parseLong(argument(command, index, what));
    }

    /** An optional lease: -1, Redisson's "none, use the watchdog", when absent. */
    private static long optionalMillis(List<String> command, int index) {
        return index < command.size() ? Long.parseLong(command.get(index)) : -1;
    }
}
