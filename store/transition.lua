-- Applies one deskbot.Transition to a request atomically: check, then set the
-- state and patch, maintain the indexes and the desk's count of open
-- requests, and append what the transition carries. Lua only compares and
-- stores strings; Go encoded every JSON value, so the model's arguments are
-- never re-encoded (cjson would round numbers). Field names: requests.go.
--
-- KEYS: 1 request hash, 2 open zset, 3 running set, 4 denials zset,
--       5 audit stream, 6 events stream, 7 inbox stream, 8 grants hash,
--       9 open-by-desk hash, 10 leader lease (lease.go), 11 the hash of
--       the desk whose halt stops the transition (Transition.UnlessHalted;
--       a desk that never exists when unset), 12 the audit chain's head
--       (audit.lua, prepended)
-- ARGV: 1 from states as "|open|running|", 2 to state, 3 now ms,
--       4 expiry rule (0 any time, 1 before expiry, 2 after expiry),
--       5 require undelivered ("1"/"0"), 6 request id, 7 events max length,
--       8 "1" with an audit entry, 9 event JSON, 10 trigger JSON, 11 grant
--       field, 12 grant JSON (8-12: "" when absent), 13 audit min id (older
--       entries are trimmed), 14-20 the audit entry's fields (audit.go),
--       21 approval record (below; "" for any other transition), 22 event
--       JSON when an approval is counted short of the count, 23 "1" when
--       the caller holds the request as it was (Transition.Held), 24 the
--       leader's fencing token ("" when not fenced), 25 the ids whose
--       approvals count as "|101|102|" ("": all), 26 the count of
--       changes the caller saw ("": unchecked, Transition.Version), 27 "1"
--       for a change (Transition.Change, always with an approval), 28 the
--       changed call's count of approvers, 29-33 the change: arguments,
--       what, by, by id, ms ("" when not a change), 34.. patch as field,
--       value pairs
-- Returns {outcome, HGETALL of the request}: outcome 0 applied, 1 wrong
-- state, 2 expired, 3 not due, 4 approval counted and more needed, 5
-- already approved by this person, 6 stale fence, 7 the desk is halted, 8
-- the approval would fill the count without the request's role; 9 the
-- call was changed since the caller's view (ARGV[26]);
-- {-1} when the request
-- does not exist. When the caller holds the request (ARGV[23]) an applied
-- transition returns {0, approvals (v), "1" if narrowed to allow once}
-- instead: the rest of the request is what the caller held plus what it
-- sent.

local function reply(code)
  return {code, redis.call('HGETALL', KEYS[1])}
end

-- Every field the checks read, in one call.
local cur = redis.call('HMGET', KEYS[1], 's', 'e', 'l', 'w', 'q', 'v', 'u', 'cn')
local state, expires, delivered, desk = cur[1], tonumber(cur[2]), cur[3], cur[4]
if not state then
  -- Vanished (or never was): make sure no index keeps pointing at it.
  redis.call('ZREM', KEYS[2], ARGV[6])
  redis.call('SREM', KEYS[3], ARGV[6])
  redis.call('ZREM', KEYS[4], ARGV[6])
  return {-1}
end
-- Fencing: a leader's transition carries its token, kept on the request as
-- 'f' (a running call's owner), and applies only while that token holds the
-- leader lease, so a leader that lost its lease unseen (a pause, a
-- partition) cannot start or interrupt a call.
local fence = ARGV[24]
if fence ~= '' and redis.call('GET', KEYS[10]) ~= fence then
  return reply(6)
end
if not string.find(ARGV[1], '|' .. state .. '|', 1, true) then
  return reply(1)
end
-- A change restarts the call: a view that showed another count of changes
-- showed another call, and neither an allow nor a change from it applies.
local changes = tonumber(cur[8]) or 0
if ARGV[26] ~= '' and tonumber(ARGV[26]) ~= changes then
  return reply(9)
end
local change = ARGV[27] == '1'
local now = tonumber(ARGV[3])
if ARGV[4] == '1' and now >= expires then
  return reply(2)
end
if ARGV[4] == '2' and now < expires then
  return reply(3)
end
if ARGV[5] == '1' and delivered and delivered ~= '' then
  return reply(1)
end
-- A risk rule's halt stops every allow of the desk, whoever taps: checked
-- here, in the step that would start the call, so no allow slips between
-- a check and its write.
if redis.call('HEXISTS', KEYS[11], 'halt') == 1 then
  return reply(7)
end

-- Four eyes. An allow that counts (ARGV[21]: approver id, decision, ms and
-- name joined by US) counts once per person toward the approvals the
-- request was held with (q; 1 when absent), kept in v as RS-led records.
-- Short of the count only the approval is kept, with an "approve" audit
-- entry and the event ARGV[22], and the request stays open. The approval
-- that meets the count applies the transition, with its grant only if every
-- counted approval was always_allow (else it is an allow once). Counted
-- here, after the state and expiry checks, the count is met exactly once
-- however many tap at once.
local auditAction, auditDetail, grantField = ARGV[14], ARGV[20], ARGV[11]
local approvals, allowOnce = nil, false
if ARGV[21] ~= '' then
  local list = cur[6] or ''
  -- A change restarts the approvals at the changer's: the earlier ones
  -- were of another call. The changed call's count applies.
  if change then list = '' end
  -- Only today's approvers count: an approval recorded by someone removed
  -- from the approvers since is dropped here (the audit trail keeps it),
  -- so it can neither make up a count nor be shown as one.
  if ARGV[25] ~= '' then
    local kept = {}
    for rec in string.gmatch(list, '\30[^\30]*') do
      if string.find(ARGV[25], '|' .. string.match(rec, '^\30([^\31]*)') .. '|', 1, true) then
        kept[#kept + 1] = rec
      end
    end
    list = table.concat(kept)
  end
  local approver = string.match(ARGV[21], '^[^\31]*')
  if string.find(list, '\30' .. approver .. '\31', 1, true) then
    return reply(5)
  end
  local need = tonumber(cur[5]) or 1
  if change then need = tonumber(ARGV[28]) or need end
  -- A role (u: its members as "|111|222|"): one counted approval must be
  -- a member's, so an outsider's that would fill the count without one
  -- is refused, and the count stays exactly what the request was held
  -- with.
  local members = cur[7]
  if members and members ~= '' and not string.find(members, '|' .. approver .. '|', 1, true) then
    local fromRole = false
    for rec in string.gmatch(list, '\30[^\30]*') do
      if string.find(members, '|' .. string.match(rec, '^\30([^\31]*)') .. '|', 1, true) then
        fromRole = true
      end
    end
    local _, before = string.gsub(list, '\30', '')
    if not fromRole and before + 1 >= need then
      return reply(8)
    end
  end
  list = list .. '\30' .. ARGV[21]
  local _, n = string.gsub(list, '\30', '')
  if n < need then
    redis.call('HSET', KEYS[1], 'v', list)
    local action, detail = 'approve', n .. ' of ' .. need
    if change then
      redis.call('HSET', KEYS[1], 'q', need, 'ca', ARGV[29], 'cw', ARGV[30], 'cb', ARGV[31], 'ci', ARGV[32], 'ct', ARGV[33], 'cn', changes + 1)
      action, detail = 'change', ARGV[30] .. '; ' .. detail
    end
    if ARGV[8] ~= '' then
      audit_append(KEYS[5], KEYS[12], ARGV[13], {action, ARGV[15], ARGV[16], ARGV[17], ARGV[18], ARGV[19], detail})
    end
    if ARGV[22] ~= '' then
      redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[7], '*', 'data', ARGV[22])
    end
    return reply(4)
  end
  approvals = list
  if need > 1 and auditDetail == '' then auditDetail = n .. ' of ' .. need end
  if change then
    auditDetail = 'changed: ' .. ARGV[30] .. (auditDetail ~= '' and ('; ' .. auditDetail) or '')
  end
  local _, always = string.gsub(list, '\30[^\31]*\31always_allow\31', '')
  allowOnce = always < n
  if allowOnce then grantField, auditAction = '', 'allow_once' end
end

local to, id = ARGV[2], ARGV[6]
local set = {'s', to}
local denyDue, nowDelivered = nil, false
for i = 34, #ARGV, 2 do
  set[#set + 1] = ARGV[i]
  set[#set + 1] = ARGV[i + 1]
  if ARGV[i] == 'n' then denyDue = ARGV[i + 1] end
  if ARGV[i] == 'l' then nowDelivered = true end
end
if fence ~= '' then
  set[#set + 1], set[#set + 2] = 'f', fence
end
if change and approvals then
  for _, kv in ipairs({{'q', ARGV[28]}, {'ca', ARGV[29]}, {'cw', ARGV[30]}, {'cb', ARGV[31]}, {'ci', ARGV[32]}, {'ct', ARGV[33]}, {'cn', changes + 1}}) do
    set[#set + 1], set[#set + 2] = kv[1], kv[2]
  end
end
if approvals then
  set[#set + 1], set[#set + 2] = 'v', approvals
  if allowOnce then set[#set + 1], set[#set + 2] = 'd', 'allow_once' end -- the later copy wins
end
redis.call('HSET', KEYS[1], unpack(set))

if state == 'open' and to ~= 'open' then
  redis.call('ZREM', KEYS[2], id)
  if desk and redis.call('HINCRBY', KEYS[9], desk, -1) <= 0 then
    redis.call('HDEL', KEYS[9], desk)
  end
elseif to == 'open' and state ~= 'open' then
  redis.call('ZADD', KEYS[2], expires, id)
  if desk then redis.call('HINCRBY', KEYS[9], desk, 1) end
end
if to == 'running' and state ~= 'running' then
  redis.call('SADD', KEYS[3], id)
elseif state == 'running' and to ~= 'running' then
  redis.call('SREM', KEYS[3], id)
end
if nowDelivered then
  redis.call('ZREM', KEYS[4], id)
elseif denyDue then
  redis.call('ZADD', KEYS[4], denyDue, id)
end

if ARGV[8] ~= '' then
  audit_append(KEYS[5], KEYS[12], ARGV[13], {auditAction, ARGV[15], ARGV[16], ARGV[17], ARGV[18], ARGV[19], auditDetail})
end
if ARGV[9] ~= '' then
  redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[7], '*', 'data', ARGV[9])
end
if ARGV[10] ~= '' then
  redis.call('XADD', KEYS[7], '*', 'data', ARGV[10])
end
if grantField ~= '' then
  redis.call('HSET', KEYS[8], grantField, ARGV[12])
end
if ARGV[23] == '1' then
  return {0, approvals or cur[6] or '', allowOnce and '1' or ''}
end
return reply(0)
