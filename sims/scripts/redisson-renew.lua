-- Redisson RLock watchdog renewal: RedissonBaseLock.renewExpirationAsync
-- (https://github.com/redisson/redisson), Copyright (c) 2013-2024 Nikita Koksharov,
-- Apache License 2.0. Script text unchanged.
-- KEYS[1] lock; ARGV[1] lease ms; ARGV[2] owner. 1: renewed; 0: not ours any more.
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;
