-- result: records what a running request's call did: running -> ran or
-- failed, with the result, and the desk told in the same step.
--
-- KEYS
--   1 the request's hash
--   2 running requests (set)
--   3 the audit stream
--   4 the audit chain's head
--   5 the event stream
--   6 the desk's inbox
-- ARGV
--   1 the request id
--   2 "1" when the caller holds the request (Transition.Held)
--   3 the state it ends in: "ran" or "failed"
--   4 the result's JSON
--   5 the desk's response
--   6 delivered at (ms) (5-6: "" leaves the field as it is)
--   7 the event's JSON ("" none)
--   8 the event stream's cap
--   9 the trigger's JSON ("" none)
--   10 the audit stream's MINID ("" no audit entry)
--   11-17 the audit entry's fields (audit.go)
-- Outcomes: 0 applied, 1 not running; {-1} when the request does not
-- exist.

local id = ARGV[1]
local cur = redis.call('HMGET', KEYS[1], 's', 'v')
if not cur[1] then
  return gone(KEYS[2], id, false)
end
if cur[1] ~= 'running' then
  return reply(1)
end
local set = {'s', ARGV[3], 'x', ARGV[4]}
put(set, 'p', ARGV[5])
put(set, 'l', ARGV[6])
redis.call('HSET', KEYS[1], unpack(set))
redis.call('SREM', KEYS[2], id)
record(KEYS[5], ARGV[8], ARGV[7], KEYS[6], ARGV[9], KEYS[3], KEYS[4], ARGV[10], unpack(ARGV, 11, 17))
return applied(ARGV[2], cur[2], false)
