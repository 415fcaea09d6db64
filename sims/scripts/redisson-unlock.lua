-- Redisson RLock release: RedissonLock.unlockInnerAsync (https://github.com/redisson/redisson),
-- Copyright (c) 2013-2024 Nikita Koksharov, Apache License 2.0. Script text unchanged.
-- KEYS[1] lock; KEYS[2] channel; KEYS[3] unlock latch (makes a retried unlock idempotent);
-- ARGV[1] unlock message; ARGV[2] lease ms; ARGV[3] owner; ARGV[4] publish command;
-- ARGV[5] latch ms. 1: released (and published); 0: still held (re-entered); nil: not ours.
local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end;
