-- lapse: closes an open request whose expiry has passed (the sweep, or a
-- tap that found it expired): open -> lapsed, the desk told in the same
-- step.
--
-- KEYS
--   1 the request's hash
--   2 open requests (zset)
--   3 open requests by desk (hash)
--   4 the audit stream
--   5 the audit chain's head
--   6 the event stream
--   7 the desk's inbox
-- ARGV
--   1 the request id
--   2 now (ms)
--   3 "1" when the caller holds the request (Transition.Held)
--   4 the desk's response
--   5 delivered at (ms) (4-5: "" leaves the field as it is)
--   6 the event's JSON ("" none)
--   7 the event stream's cap
--   8 the trigger's JSON ("" none)
--   9 the audit stream's MINID ("" no audit entry)
--   10-16 the audit entry's fields (audit.go)
-- Outcomes: 0 applied, 1 not open, 3 not due yet; {-1} when the request
-- does not exist.

local id = ARGV[1]
local cur = redis.call('HMGET', KEYS[1], 's', 'e', 'w', 'v')
if not cur[1] then
  return gone(KEYS[2], id, true)
end
if cur[1] ~= 'open' then
  return reply(1)
end
if tonumber(ARGV[2]) < tonumber(cur[2]) then
  return reply(3)
end
local set = {'s', 'lapsed'}
put(set, 'p', ARGV[4])
put(set, 'l', ARGV[5])
redis.call('HSET', KEYS[1], unpack(set))
closed(KEYS[2], KEYS[3], id, cur[3])
record(KEYS[6], ARGV[7], ARGV[6], KEYS[7], ARGV[8], KEYS[4], KEYS[5], ARGV[9], unpack(ARGV, 10, 16))
return applied(ARGV[3], cur[4], false)
