import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.StandardLockInternalsDriver;
import org.apache.zookeeper.CreateMode;

/**
 * {@code InterProcessMutex}'s own driver, remembering the lock node each create returned
 * (Curator 5.4 has no {@code getLockNodePath()}), and able to create without protection.
 *
 * <p>Curator 5's {@code StandardLockInternalsDriver.createsTheLock} always creates with
 * {@code withProtection()}. For {@code protected = false} this driver makes the create of
 * Curator before CURATOR-79 (a plain {@code EPHEMERAL_SEQUENTIAL} create through the same
 * retrying client): the one extension point {@code InterProcessMutex}'s public constructor
 * offers, every other step (sorting, waiting, deleting) stays Curator's.
 */
final class LockNodeDriver extends StandardLockInternalsDriver {
    private final boolean protectedMode;
    /** The node the last create of each thread returned. */
    private final ThreadLocal<String> lastCreated = new ThreadLocal<>();

    LockNodeDriver(boolean protectedMode) {
        this.protectedMode = protectedMode;
    }

    @Override
    public String createsTheLock(CuratorFramework client, String path, byte[] lockNodeBytes) throws Exception {
        String ours;
        if (protectedMode) {
            ours = super.createsTheLock(client, path, lockNodeBytes);
        } else if (lockNodeBytes != null) {
            ours = client.create().creatingParentContainersIfNeeded()
                    .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(path, lockNodeBytes);
        } else {
            ours = client.create().creatingParentContainersIfNeeded()
                    .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(path);
        }
        lastCreated.set(ours);
        return ours;
    }

    /** The node this thread's last create returned (the lock node of its last acquire). */
    String lastCreated() {
        return lastCreated.get();
    }
}
