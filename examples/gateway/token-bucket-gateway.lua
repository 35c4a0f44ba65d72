-- A Redis + Lua token bucket from a production gateway's distributed rate
-- limiter, kept as its team wrote it (comments translated where they were
-- Chinese). The gateway called it once per request with
--   EVALSHA <sha> 1 <key> <capacity> <rate> <now>
-- and answered 429 when it returned 0. It ran with capacity = 2000,
-- rate = 1000; `now` was the gateway's clock in seconds (the notes do not
-- say with what precision). Its authors describe it as "a standard token
-- bucket": examples/gateway/plan.yaml holds it to that claim with rlbench's
-- lab gateway (lab.gateway.lua).
--
-- KEYS[1]: rate_limit_key
-- ARGV[1]: capacity (bucket size)
-- ARGV[2]: rate (tokens generated per second)
-- ARGV[3]: current_timestamp (the current time)
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])

local last_time = tonumber(redis.call('hget', KEYS[1], 'last_time') or '0')
local current_tokens = tonumber(redis.call('hget', KEYS[1], 'tokens') or capacity)

-- tokens generated since the last call
local delta_tokens = math.floor((now - last_time) * rate)
local tokens = math.min(capacity, current_tokens + delta_tokens)

if tokens > 0 then
    redis.call('hset', KEYS[1], 'tokens', tokens - 1)
    redis.call('hset', KEYS[1], 'last_time', now)
    return 1 -- admit
else
    return 0 -- limit
end

