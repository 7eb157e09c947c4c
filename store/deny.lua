-- deny: an approver's denial of an open request, before its expiry:
-- open -> denied. The desk is told in the same step (a response and a
-- trigger), or later (reason.lua) once a reason came or its wait ran out
-- (the denials index, by due time).
--
-- KEYS
--   1 the request's hash
--   2 open requests (zset)
--   3 open requests by desk (hash)
--   4 denials waiting for a reason (zset)
--   5 the audit stream
--   6 the audit chain's head
--   7 the event stream
--   8 the desk's inbox
--   9 the leader lease (lease.go)
-- ARGV
--   1 the request id
--   2 now (ms)
--   3 "1" when the caller holds the request (Transition.Held)
--   4 the leader's fencing token ("" when not fenced)
--   5 decision
--   6 decided by
--   7 decided by id
--   8 decided at (ms)
--   9 reason
--   10 the decision's token
--   11 the desk's response
--   12 delivered at (ms)
--   13 the reason's wait ends at (ms) (5-13: "" leaves the field as it is)
--   14 the event's JSON ("" none)
--   15 the event stream's cap
--   16 the trigger's JSON ("" none)
--   17 the audit stream's MINID ("" no audit entry)
--   18-24 the audit entry's fields (audit.go)
-- Outcomes: 0 applied (denied), 1 not open, 2 expired, 6 stale fence;
-- {-1} when the request does not exist.

local id = ARGV[1]
local cur = redis.call('HMGET', KEYS[1], 's', 'e', 'w', 'v')
local state, expires, desk = cur[1], tonumber(cur[2]), cur[3]
if not state then
  return gone(KEYS[2], id, true)
end
local fence = ARGV[4]
if stale(KEYS[9], fence) then
  return reply(6)
end
if state ~= 'open' then
  return reply(1)
end
if tonumber(ARGV[2]) >= expires then
  return reply(2)
end

local set = {'s', 'denied'}
put(set, 'd', ARGV[5])
put(set, 'b', ARGV[6])
put(set, 'i', ARGV[7])
put(set, 't', ARGV[8])
put(set, 'r', ARGV[9])
put(set, 'k', ARGV[10])
put(set, 'p', ARGV[11])
put(set, 'l', ARGV[12])
put(set, 'n', ARGV[13])
put(set, 'f', fence)
redis.call('HSET', KEYS[1], unpack(set))
closed(KEYS[2], KEYS[3], id, desk)
if ARGV[12] ~= '' then
  redis.call('ZREM', KEYS[4], id)
elseif ARGV[13] ~= '' then
  redis.call('ZADD', KEYS[4], ARGV[13], id)
end
record(KEYS[7], ARGV[15], ARGV[14], KEYS[8], ARGV[16], KEYS[5], KEYS[6], ARGV[17], unpack(ARGV, 18, 24))
return applied(ARGV[3], cur[4], false)
