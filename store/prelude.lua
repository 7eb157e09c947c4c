-- What every transition's script shares (transition.go): concatenated
-- after audit.lua in front of each (allow.lua, change.lua, deny.lua,
-- result.lua, reason.lua, lapse.lua, interrupt.lua; hold.lua, which
-- checks nothing, needs audit.lua alone).
-- Lua only compares and stores strings; Go encoded every JSON value, so the
-- model's arguments are never re-encoded (cjson would round numbers).
-- Field names: requests.go. Every script's KEYS[1] is the request's hash.
--
-- Outcomes (deskbot.Outcome): 0 applied, 1 wrong state, 2 expired, 3 not
-- due, 4 approval counted and more needed, 5 already approved by this
-- person, 6 stale fence, 7 the desk is halted, 8 the approval would fill
-- the count without the request's role, 9 the call was changed since the
-- caller's view. A script answers {outcome, HGETALL of the request}, {-1}
-- when the request does not exist, or, when the caller holds the request
-- and the transition applied, {0, approvals (v), "1" if narrowed to allow
-- once}: the rest of the request is what the caller held plus what it
-- sent.

local function reply(code)
  return {code, redis.call('HGETALL', KEYS[1])}
end

-- gone answers for a request that vanished (or never was), first making
-- sure that the index the transition starts from no longer points at it.
local function gone(index, id, sorted)
  if sorted then
    redis.call('ZREM', index, id)
  else
    redis.call('SREM', index, id)
  end
  return {-1}
end

-- applied is the answer of a transition that applied: little when the
-- caller holds the request (held "1"), else the request as it stands.
local function applied(held, approvals, once)
  if held == '1' then
    return {0, approvals or '', once and '1' or ''}
  end
  return reply(0)
end

-- Fencing: a leader's transition carries its token (fence, "" when not
-- fenced), kept on the request as 'f' (a running call's owner), and
-- applies only while that token holds the leader lease, so a leader that
-- lost its lease unseen (a pause, a partition) cannot start or interrupt a
-- call.
local function stale(leader, fence)
  return fence ~= '' and redis.call('GET', leader) ~= fence
end

-- put adds field, value to an HSET's arguments unless value is "" (a
-- patch's zero field leaves the request's as it is).
local function put(set, field, value)
  if value ~= '' then
    set[#set + 1], set[#set + 2] = field, value
  end
end

-- closed takes an open request out of the open index and its desk's count.
local function closed(open, openby, id, desk)
  redis.call('ZREM', open, id)
  if desk and redis.call('HINCRBY', openby, desk, -1) <= 0 then
    redis.call('HDEL', openby, desk)
  end
end

-- record writes what a transition carries, each "" when absent: the audit
-- entry (minid "" for none; ... its seven values, as audit_append takes
-- them, last so that they need no table), the event and the desk's
-- trigger (a script with no trigger passes nil for inbox and trigger).
local function record(events, maxlen, event, inbox, trigger, audit, head, minid, ...)
  if minid ~= '' then
    audit_append(audit, head, minid, ...)
  end
  if event and event ~= '' then
    redis.call('XADD', events, 'MAXLEN', '~', maxlen, '*', 'data', event)
  end
  if trigger and trigger ~= '' then
    redis.call('XADD', inbox, '*', 'data', trigger)
  end
end

-- Four eyes. An approval (record: approver id, decision, ms and name
-- joined by US) counts once per person toward need, kept in v (list) as
-- RS-led records. Only today's approvers count (approvers "|101|102|",
-- "" for all): an approval recorded by someone removed from the approvers
-- since is dropped here (the audit trail keeps it), so it can neither make
-- up a count nor be shown as one. A role (members "|111|222|"): one
-- counted approval must be a member's, so an outsider's that would fill
-- the count without one is refused, and the count stays exactly what the
-- request was held with. count answers an outcome (5 already approved, 8
-- the role's approval needed) or nil, the list with the approval and
-- how many it holds.
local function count(list, record, approvers, need, members)
  if approvers ~= '' then
    local kept = {}
    for rec in string.gmatch(list, '\30[^\30]*') do
      if string.find(approvers, '|' .. string.match(rec, '^\30([^\31]*)') .. '|', 1, true) then
        kept[#kept + 1] = rec
      end
    end
    list = table.concat(kept)
  end
  local approver = string.match(record, '^[^\31]*')
  if string.find(list, '\30' .. approver .. '\31', 1, true) then
    return 5
  end
  if members and members ~= '' and not string.find(members, '|' .. approver .. '|', 1, true) then
    local fromRole = false
    for rec in string.gmatch(list, '\30[^\30]*') do
      if string.find(members, '|' .. string.match(rec, '^\30([^\31]*)') .. '|', 1, true) then
        fromRole = true
      end
    end
    local _, before = string.gsub(list, '\30', '')
    if not fromRole and before + 1 >= need then
      return 8
    end
  end
  list = list .. '\30' .. record
  local _, n = string.gsub(list, '\30', '')
  return nil, list, n
end

-- narrowed says whether the n approvals in list make an allow once: a
-- grant is given only if every counted approval was always_allow.
local function narrowed(list, n)
  local _, always = string.gsub(list, '\30[^\31]*\31always_allow\31', '')
  return always < n
end
