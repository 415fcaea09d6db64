import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The scenario's {@code [lock]} table (locksim's {@code LOCKSIM_LOCK}) as Curator settings.
 * A key the table lacks takes locksim's default, so the adapter runs the scenario's
 * settings even when started by hand with a partial table.
 */
final class LockSettings {
    /** {@code session_timeout_ms}: CuratorFrameworkFactory's {@code sessionTimeoutMs}. */
    final int sessionTimeoutMs;
    /** {@code connection_timeout_ms}: CuratorFrameworkFactory's {@code connectionTimeoutMs}. */
    final int connectionTimeoutMs;
    /** {@code retries}: ExponentialBackoffRetry's {@code maxRetries}. */
    final int retries;
    /** {@code retry_base_ms}: ExponentialBackoffRetry's {@code baseSleepTimeMs}. */
    final int retryBaseMs;
    /** {@code protected}: create lock nodes with Curator's {@code _c_<GUID>-} prefix. */
    final boolean protectedMode;
    /** {@code on_suspended = "stop"}: SUSPENDED or LOST ends every grant (a {@code lost} notice). */
    final boolean stopOnSuspended;
    /** {@code token}: {@code czxid}, {@code sequence} or {@code none}. */
    final String token;

    private LockSettings(JsonNode lock) {
        sessionTimeoutMs = lock.path("session_timeout_ms").asInt(1000);
        connectionTimeoutMs = lock.path("connection_timeout_ms").asInt(500);
        retries = lock.path("retries").asInt(3);
        retryBaseMs = lock.path("retry_base_ms").asInt(20);
        protectedMode = lock.path("protected").asBoolean(true);
        stopOnSuspended = "stop".equals(lock.path("on_suspended").asText("continue"));
        token = lock.path("token").asText("czxid");
    }

    /** Reads {@code text} (the JSON object of {@code LOCKSIM_LOCK}; empty means defaults). */
    static LockSettings parse(ObjectMapper json, String text) throws BadInput {
        if (text == null || text.isBlank()) {
            text = "{}";
        }
        JsonNode lock;
        try {
            lock = json.readTree(text);
        } catch (Exception e) {
            throw new BadInput("LOCKSIM_LOCK is not JSON: " + e.getMessage());
        }
        if (!lock.isObject()) {
            throw new BadInput("LOCKSIM_LOCK is not a JSON object: " + text);
        }
        LockSettings s = new LockSettings(lock);
        if (!s.token.equals("czxid") && !s.token.equals("sequence") && !s.token.equals("none")) {
            throw new BadInput("LOCKSIM_LOCK: token must be czxid, sequence or none, got " + s.token);
        }
        if (s.sessionTimeoutMs <= 0 || s.connectionTimeoutMs <= 0 || s.retries < 0 || s.retryBaseMs <= 0) {
            throw new BadInput("LOCKSIM_LOCK: timeouts must be positive and retries not negative: " + text);
        }
        return s;
    }

    /** A start-up setting the adapter cannot run with (exit code 2). */
    static final class BadInput extends Exception {
        BadInput(String message) {
            super(message);
        }
    }
}
