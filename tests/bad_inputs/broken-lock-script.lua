-- Not Lua: a bad-input fixture (tests/bad_inputs/lock-script-syntax-error.toml).
if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1])
