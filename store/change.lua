-- change: an approver's change of an open request's call, before its
-- expiry, which is also the changer's approval of the changed call: the
-- approvals restart at the changer's, the count becomes the changed
-- call's, and with the approval that meets it open -> running (an allow
-- once: a change grants nothing).
--
-- KEYS
--   1 the request's hash
--   2 open requests (zset)
--   3 open requests by desk (hash)
--   4 running requests (set)
--   5 the audit stream
--   6 the audit chain's head
--   7 the event stream
--   8 the leader lease (lease.go)
--   9 the request's desk, whose halt stops every allow
-- ARGV
--   1 the request id
--   2 now (ms)
--   3 "1" when the caller holds the request (Transition.Held)
--   4 the leader's fencing token ("" when not fenced)
--   5 the count of changes the caller saw
--   6 the changer's approval's record (requests.go)
--   7 the ids whose approvals count, "|101|102|" ("" all)
--   8 decision
--   9 decided by
--   10 decided by id
--   11 decided at (ms)
--   12 reason
--   13 the decision's token (8-13: "" leaves the field as it is)
--   14 the event's JSON ("" none)
--   15 the event's JSON when the approval is counted short of the count
--   16 the event stream's cap
--   17 the changed call's count of approvers
--   18 the changed arguments
--   19 what changed
--   20 changed by
--   21 changed by id
--   22 changed at (ms)
--   23 the audit stream's MINID ("" no audit entry)
--   24-30 the audit entry's fields (audit.go)
-- Outcomes: 0 applied (running), 1 not open, 2 expired, 4 changed and
-- counted short of the changed call's count (still open), 6 stale fence,
-- 7 the desk is halted, 8 the role's approval needed, 9 changed since the
-- caller's view; {-1} when the request does not exist.

local id = ARGV[1]
local cur = redis.call('HMGET', KEYS[1], 's', 'e', 'w', 'u', 'cn')
local state, expires, desk = cur[1], tonumber(cur[2]), cur[3]
if not state then
  return gone(KEYS[2], id, true)
end
local fence = ARGV[4]
if stale(KEYS[8], fence) then
  return reply(6)
end
if state ~= 'open' then
  return reply(1)
end
-- A change restarts the call: a view that showed another count of changes
-- showed another call, and no change from it applies.
local changes = tonumber(cur[5]) or 0
if tonumber(ARGV[5]) ~= changes then
  return reply(9)
end
if tonumber(ARGV[2]) >= expires then
  return reply(2)
end
if redis.call('HEXISTS', KEYS[9], 'halt') == 1 then
  return reply(7)
end

-- The approvals restart at the changer's: the earlier ones were of
-- another call. The changed call's count applies.
local need = tonumber(ARGV[17])
local refused, list, n = count('', ARGV[6], ARGV[7], need, cur[4])
if refused then
  return reply(refused)
end
local change = {'q', ARGV[17], 'ca', ARGV[18], 'cw', ARGV[19], 'cb', ARGV[20], 'ci', ARGV[21], 'ct', ARGV[22], 'cn', changes + 1, 'v', list}
local f = {ARGV[24], ARGV[25], ARGV[26], ARGV[27], ARGV[28], ARGV[29], ARGV[30]}
if n < need then
  redis.call('HSET', KEYS[1], unpack(change))
  record(KEYS[7], ARGV[16], ARGV[15], nil, nil, KEYS[5], KEYS[6], ARGV[23],
    'change', f[2], f[3], f[4], f[5], f[6], ARGV[19] .. '; ' .. n .. ' of ' .. need)
  return reply(4)
end
if need > 1 and f[7] == '' then f[7] = n .. ' of ' .. need end
f[7] = 'changed: ' .. ARGV[19] .. (f[7] ~= '' and ('; ' .. f[7]) or '')
local once = narrowed(list, n)
if once then f[1] = 'allow_once' end

local set = {'s', 'running'}
put(set, 'd', ARGV[8])
put(set, 'b', ARGV[9])
put(set, 'i', ARGV[10])
put(set, 't', ARGV[11])
put(set, 'r', ARGV[12])
put(set, 'k', ARGV[13])
put(set, 'f', fence)
for _, v in ipairs(change) do set[#set + 1] = v end
if once then set[#set + 1], set[#set + 2] = 'd', 'allow_once' end -- the later copy wins
redis.call('HSET', KEYS[1], unpack(set))
closed(KEYS[2], KEYS[3], id, desk)
redis.call('SADD', KEYS[4], id)
record(KEYS[7], ARGV[16], ARGV[14], nil, nil, KEYS[5], KEYS[6], ARGV[23], unpack(f, 1, 7))
return applied(ARGV[3], list, once)
