-- interrupt: ends a running request whose leader is gone (Recover), only
-- while the caller leads: running -> interrupted, the desk told in the
-- same step that its call was not run again.
--
-- KEYS
--   1 the request's hash
--   2 running requests (set)
--   3 the audit stream
--   4 the audit chain's head
--   5 the event stream
--   6 the desk's inbox
--   7 the leader lease (lease.go)
-- ARGV
--   1 the request id
--   2 the leader's fencing token ("" when not fenced)
--   3 the desk's response
--   4 delivered at (ms) (3-4: "" leaves the field as it is)
--   5 the event's JSON ("" none)
--   6 the event stream's cap
--   7 the trigger's JSON ("" none)
--   8 the audit stream's MINID ("" no audit entry)
--   9-15 the audit entry's fields (audit.go)
-- Outcomes: 0 applied, 1 not running, 6 stale fence; {-1} when the
-- request does not exist.

local id = ARGV[1]
local state = redis.call('HGET', KEYS[1], 's')
if not state then
  return gone(KEYS[2], id, false)
end
local fence = ARGV[2]
if stale(KEYS[7], fence) then
  return reply(6)
end
if state ~= 'running' then
  return reply(1)
end
local set = {'s', 'interrupted'}
put(set, 'p', ARGV[3])
put(set, 'l', ARGV[4])
put(set, 'f', fence)
redis.call('HSET', KEYS[1], unpack(set))
redis.call('SREM', KEYS[2], id)
record(KEYS[5], ARGV[6], ARGV[5], KEYS[6], ARGV[7], KEYS[3], KEYS[4], ARGV[8], unpack(ARGV, 9, 15))
return reply(0)
