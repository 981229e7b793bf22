package lab.interop;

// The book's Java snippet (chapter "Testing your code on the fake"), run by scripts/book-clients
// with Jedis against fake-redis-server --clock virtual, on the port given as its argument:
// java -cp redisson-driver.jar lab.interop.BookSnippet <port>

// ANCHOR: imports
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.util.SafeEncoder;

// ANCHOR_END: imports
public final class BookSnippet {
    private BookSnippet() {}

    /** An assertion that holds with assertions off too (`java` runs without `-ea`). */
    private static void check(boolean holds, String what) {
        if (!holds) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) {
        int port = Integer.parseInt(args[0]);
        // ANCHOR: snippet
        try (Jedis r = new Jedis("127.0.0.1", port)) {
            r.setex("session", 30, "alice");
            r.sendCommand(() -> SafeEncoder.encode("FAKE.ADVANCE"), "31000");
            check(!r.exists("session"), "expired after 31 s of the fake's clock");

            r.sendCommand(() -> SafeEncoder.encode("FAKE.FAULT"), "DROP-REPLY", "*", "NEXT", "1");
            try {
                r.incr("visits");
                check(false, "the reply was lost");
            } catch (JedisConnectionException lost) {
                // the connection closed unanswered, after the write
            }
        }
        try (Jedis r = new Jedis("127.0.0.1", port)) {
            check("1".equals(r.get("visits")), "the lost call was applied");
        }
        // ANCHOR_END: snippet
        System.out.println("the book's Java snippet ran");
    }
}
