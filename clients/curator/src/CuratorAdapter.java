import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

/**
 * locksim's external-client adapter for Curator's {@code InterProcessMutex}
 * (docs/external-clients.md): one request at a time from stdin, one reply line each on
 * stdout, {@code lost} notices from Curator's connection-state listener.
 *
 * <p>Every request runs on the main thread: {@code InterProcessMutex} counts re-entry and
 * checks ownership per thread, so one thread is "the client".
 */
public final class CuratorAdapter {
    /** Where locksim's recipe keeps lock {@code L}: {@code /locks/L}. */
    private static final String LOCK_ROOT = "/locks/";

    /** One grant given to locksim. */
    private record Held(String lock, String node) {}

    private final ObjectMapper json = new ObjectMapper();
    private final PrintStream protocol;
    private final LockSettings settings;
    private final CuratorFramework client;
    private final LockNodeDriver driver;
    private final Map<String, InterProcessMutex> mutexes = new HashMap<>();
    /** Grants not yet released; the listener thread reads it. */
    private final Map<String, Held> grants = new ConcurrentHashMap<>();
    /** The connection's last state, as the listener saw it (null: never changed). */
    private volatile ConnectionState lastState;
    private long nextGrant = 1;

    private CuratorAdapter(PrintStream protocol, LockSettings settings, String connect) {
        this.protocol = protocol;
        this.settings = settings;
        this.driver = new LockNodeDriver(settings.protectedMode);
        this.client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(settings.sessionTimeoutMs)
                .connectionTimeoutMs(settings.connectionTimeoutMs)
                .retryPolicy(new ExponentialBackoffRetry(settings.retryBaseMs, settings.retries))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> onState(state));
    }

    public static void main(String[] args) throws Exception {
        // Only protocol lines may reach stdout: anything else printing there goes to stderr.
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        String connect = System.getenv("LOCKSIM_CONNECT");
        if (connect == null || connect.isBlank()) {
            System.err.println("curator adapter: LOCKSIM_CONNECT is not set (a ZooKeeper connect string)");
            System.exit(2);
        }
        LockSettings settings;
        try {
            settings = LockSettings.parse(new ObjectMapper(), System.getenv("LOCKSIM_LOCK"));
        } catch (LockSettings.BadInput e) {
            System.err.println("curator adapter: " + e.getMessage());
            System.exit(2);
            return;
        }
        CuratorAdapter adapter = new CuratorAdapter(protocol, settings, connect);
        adapter.client.start();
        int status = adapter.serve(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
        adapter.client.close();
        System.exit(status);
    }

    /** The request loop, until stdin closes (0) or a line cannot be understood (2). */
    private int serve(BufferedReader in) throws Exception {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode req;
            try {
                req = json.readTree(line);
            } catch (Exception e) {
                System.err.println("curator adapter: request is not JSON: " + line);
                return 2;
            }
            if (!req.isObject() || !req.path("id").canConvertToLong()) {
                System.err.println("curator adapter: request without a numeric id: " + line);
                return 2;
            }
            ObjectNode reply = handle(req);
            reply.put("id", req.get("id").asLong());
            emit(reply);
            lostSinceGranted(reply);
        }
        return 0;
    }

    private ObjectNode handle(JsonNode req) {
        String op = req.path("op").asText("");
        String lock = req.path("lock").asText("L");
        return switch (op) {
            case "acquire" -> acquire(lock, "try".equals(req.path("mode").asText("wait")),
                    req.path("timeout_ms").asLong(0));
            case "release" -> release(req.path("grant").asText(""));
            // Curator cleans up a failed acquire itself (its guaranteed delete of the
            // node): an acquire that threw left nothing this adapter can undo.
            case "abandon" -> released(false);
            default -> refused("unknown op '" + op + "'");
        };
    }

    private InterProcessMutex mutex(String lock) {
        return mutexes.computeIfAbsent(lock, l -> new InterProcessMutex(client, LOCK_ROOT + l, driver));
    }

    private ObjectNode acquire(String lock, boolean tryOnce, long timeoutMs) {
        InterProcessMutex mutex = mutex(lock);
        String heldNode = grants.values().stream().filter(h -> h.lock.equals(lock)).map(Held::node)
                .findFirst().orElse(null);
        boolean got;
        try {
            // acquire(0) is Curator's one attempt: create, look, delete if not first.
            got = mutex.acquire(tryOnce ? 0 : timeoutMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            return reply("unknown").put("reason", "acquire threw " + e);
        }
        if (!got) {
            return refused(tryOnce ? "busy: another lock node sorts first (acquire(0))"
                    : "timed out after " + timeoutMs + " ms");
        }
        // A re-entrant acquire only counts: the node is the outer grant's.
        String node = heldNode != null ? heldNode : driver.lastCreated();
        ObjectNode granted = reply("granted");
        if (!settings.token.equals("none")) {
            Long token = token(node);
            if (token == null) {
                releaseQuietly(mutex);
                return reply("unknown").put("reason", "granted, but reading the token of " + node + " failed");
            }
            granted.put("token", token);
        }
        String grant = "g" + nextGrant++;
        grants.put(grant, new Held(lock, node));
        return granted.put("grant", grant).put("owner", node);
    }

    /** The grant's fencing token: its node's czxid (one read) or sequence suffix; null if unknown. */
    private Long token(String node) {
        if (settings.token.equals("sequence")) {
            return Long.parseLong(node.substring(node.length() - 10));
        }
        try {
            Stat stat = client.checkExists().forPath(node);
            return stat == null ? null : stat.getCzxid();
        } catch (Exception e) {
            System.err.println("curator adapter: reading " + node + ": " + e);
            return null;
        }
    }

    private ObjectNode release(String grant) {
        Held held = grants.remove(grant);
        if (held == null) {
            return refused("no such grant '" + grant + "'");
        }
        boolean outermost = grants.values().stream().noneMatch(h -> h.lock.equals(held.lock));
        // Curator's release ignores a node already gone (NoNode): look first, so that a
        // node an expired session took is reported as released = false.
        boolean present = true;
        if (outermost) {
            try {
                present = client.checkExists().forPath(held.node) != null;
            } catch (Exception e) {
                System.err.println("curator adapter: looking for " + held.node + " before release: " + e);
            }
        }
        try {
            mutex(held.lock).release();
        } catch (IllegalMonitorStateException e) {
            return refused("release: " + e.getMessage());
        } catch (Exception e) {
            return reply("unknown").put("reason", "release threw " + e);
        }
        return released(present);
    }

    private static void releaseQuietly(InterProcessMutex mutex) {
        try {
            mutex.release();
        } catch (Exception e) {
            System.err.println("curator adapter: release after a failed token read: " + e);
        }
    }

    /**
     * A grant given while the connection is SUSPENDED or LOST (the state changed during the
     * acquire, or the listener's notice went out before the reply named the grant, when
     * locksim ignores it) is lost at once: say so after the reply.
     */
    private void lostSinceGranted(ObjectNode reply) {
        ConnectionState state = lastState;
        boolean gone = state == ConnectionState.SUSPENDED || state == ConnectionState.LOST;
        if (settings.stopOnSuspended && gone && reply.path("reply").asText().equals("granted")) {
            ObjectNode notice = json.createObjectNode();
            notice.put("notice", "lost").put("grant", reply.path("grant").asText()).put("reason", state.toString());
            emit(notice);
        }
    }

    /** Curator's connection-state listener: with on_suspended = stop, SUSPENDED or LOST ends every grant. */
    private void onState(ConnectionState state) {
        lastState = state;
        System.err.println("curator adapter: connection " + state);
        if (!settings.stopOnSuspended || (state != ConnectionState.SUSPENDED && state != ConnectionState.LOST)) {
            return;
        }
        for (String grant : grants.keySet()) {
            ObjectNode notice = json.createObjectNode();
            notice.put("notice", "lost").put("grant", grant).put("reason", state.toString());
            emit(notice);
        }
    }

    private ObjectNode reply(String kind) {
        return json.createObjectNode().put("reply", kind);
    }

    private ObjectNode refused(String reason) {
        return reply("refused").put("reason", reason);
    }

    private ObjectNode released(boolean released) {
        return reply("released").put("released", released);
    }

    /** One protocol line, flushed; replies and notices come from two threads. */
    private synchronized void emit(ObjectNode line) {
        try {
            protocol.print(json.writeValueAsString(line) + "\n");
        } catch (Exception e) {
            throw new IllegalStateException("cannot serialise " + line, e);
        }
        protocol.flush();
    }
}
