-- Redisson RLock acquire: RedissonLock.tryLockInnerAsync (https://github.com/redisson/redisson),
-- Copyright (c) 2013-2024 Nikita Koksharov, Apache License 2.0. Script text unchanged.
-- KEYS[1] lock; ARGV[1] lease ms; ARGV[2] owner ("<client id>:<thread id>").
-- nil: granted (or re-entered: the count goes up); otherwise the holder's remaining PTTL.
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);
