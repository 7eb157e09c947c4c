-- allow: an approver's allow of an open request, before its expiry:
-- counted toward the approvals the request needs, and, with the approval
-- that meets the count, open -> running (with the grant of an always
-- allow when every counted approval was one).
--
-- KEYS
--   1 the request's hash
--   2 open requests (zset)
--   3 open requests by desk (hash)
--   4 running requests (set)
--   5 the audit stream
--   6 the audit chain's head
--   7 the event stream
--   8 the grants (hash)
--   9 the leader lease (lease.go)
--   10 the request's desk, whose halt stops every allow
-- ARGV
--   1 the request id
--   2 now (ms)
--   3 "1" when the caller holds the request (Transition.Held)
--   4 the leader's fencing token ("" when not fenced)
--   5 the count of changes the caller saw ("" unchecked)
--   6 the approval's record (requests.go; "" counts none)
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
--   17 the grant's field ("" none)
--   18 the grant's JSON
--   19 the audit stream's MINID ("" no audit entry)
--   20-26 the audit entry's fields (audit.go)
-- Outcomes: 0 applied (running), 1 not open, 2 expired, 4 counted short
-- of the count (still open), 5 already approved by this person, 6 stale
-- fence, 7 the desk is halted, 8 the role's approval needed, 9 changed
-- since the caller's view; {-1} when the request does not exist.

local id = ARGV[1]
local cur = redis.call('HMGET', KEYS[1], 's', 'e', 'w', 'q', 'v', 'u', 'cn')
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
-- A change restarts the call: a view that showed another count of changes
-- showed another call, and no allow from it applies.
if ARGV[5] ~= '' and tonumber(ARGV[5]) ~= (tonumber(cur[7]) or 0) then
  return reply(9)
end
if tonumber(ARGV[2]) >= expires then
  return reply(2)
end
-- A risk rule's halt stops every allow of the desk, whoever taps: checked
-- here, in the step that would start the call, so no allow slips between
-- a check and its write.
if redis.call('HEXISTS', KEYS[10], 'halt') == 1 then
  return reply(7)
end

local f = {ARGV[20], ARGV[21], ARGV[22], ARGV[23], ARGV[24], ARGV[25], ARGV[26]}
local grantField = ARGV[17]
local approvals, once = nil, false
if ARGV[6] ~= '' then
  -- Short of the count only the approval is kept, with an "approve"
  -- audit entry and the event ARGV[15], and the request stays open.
  -- Counted here, after the state and expiry checks, the count is met
  -- exactly once however many tap at once.
  local need = tonumber(cur[4]) or 1
  local refused, list, n = count(cur[5] or '', ARGV[6], ARGV[7], need, cur[6])
  if refused then
    return reply(refused)
  end
  if n < need then
    redis.call('HSET', KEYS[1], 'v', list)
    record(KEYS[7], ARGV[16], ARGV[15], nil, nil, KEYS[5], KEYS[6], ARGV[19],
      'approve', f[2], f[3], f[4], f[5], f[6], n .. ' of ' .. need)
    return reply(4)
  end
  approvals = list
  if need > 1 and f[7] == '' then f[7] = n .. ' of ' .. need end
  once = narrowed(list, n)
  if once then grantField, f[1] = '', 'allow_once' end
end

local set = {'s', 'running'}
put(set, 'd', ARGV[8])
put(set, 'b', ARGV[9])
put(set, 'i', ARGV[10])
put(set, 't', ARGV[11])
put(set, 'r', ARGV[12])
put(set, 'k', ARGV[13])
put(set, 'f', fence)
if approvals then
  set[#set + 1], set[#set + 2] = 'v', approvals
  if once then set[#set + 1], set[#set + 2] = 'd', 'allow_once' end -- the later copy wins
end
redis.call('HSET', KEYS[1], unpack(set))
closed(KEYS[2], KEYS[3], id, desk)
redis.call('SADD', KEYS[4], id)
record(KEYS[7], ARGV[16], ARGV[14], nil, nil, KEYS[5], KEYS[6], ARGV[19], unpack(f, 1, 7))
if grantField ~= '' then
  redis.call('HSET', KEYS[8], grantField, ARGV[18])
end
return applied(ARGV[3], approvals or cur[5], once)
