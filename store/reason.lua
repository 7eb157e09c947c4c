-- reason: completes a denial the desk has not been told of yet: denied ->
-- denied, with the reason (if one came) and the response that tells the
-- desk, which leaves the denials index once delivered.
--
-- KEYS
--   1 the request's hash
--   2 denials waiting for a reason (zset)
--   3 the audit stream
--   4 the audit chain's head
--   5 the desk's inbox
-- ARGV
--   1 the request id
--   2 reason
--   3 the desk's response
--   4 delivered at (ms) (2-4: "" leaves the field as it is)
--   5 the trigger's JSON ("" none)
--   6 the audit stream's MINID ("" no audit entry)
--   7-13 the audit entry's fields (audit.go)
-- Outcomes: 0 applied, 1 not denied or the desk already told; {-1} when
-- the request does not exist.

local id = ARGV[1]
local cur = redis.call('HMGET', KEYS[1], 's', 'l')
if not cur[1] then
  return gone(KEYS[2], id, true)
end
if cur[1] ~= 'denied' or (cur[2] and cur[2] ~= '') then
  return reply(1)
end
local set = {}
put(set, 'r', ARGV[2])
put(set, 'p', ARGV[3])
put(set, 'l', ARGV[4])
if #set > 0 then
  redis.call('HSET', KEYS[1], unpack(set))
end
if ARGV[4] ~= '' then
  redis.call('ZREM', KEYS[2], id)
end
record(nil, nil, nil, KEYS[5], ARGV[5], KEYS[3], KEYS[4], ARGV[6], unpack(ARGV, 7, 13))
return reply(0)
