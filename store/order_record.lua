-- Records a desk's order as its broker reports it and books what it filled
-- since it was last recorded, in one step, so the book never counts a fill
-- twice nor misses one, whoever records it and however often
-- (deskbot.OrderStore.RecordOrder). After book.lua.
--
-- KEYS: 1 the desk's orders of the order's trading day, 2 the open orders
--       index, 3 the desk's book, 4 the desk's journal (keys.go)
-- ARGV: 1 tag, 2 the order's JSON, 3 its version, 4 from (the version it
--       must be at now; "" any, "-" only when absent), 5 filled, 6 average
--       price, 7 symbol, 8 side, 9 millis, 10 journal cap, 11 final ("1":
--       no longer open), 12 where ("day desk", the open index's value),
--       13 told ("1": the caller tells this version itself, so it counts
--       as told), 14 ttl seconds, 15 send ("send": this move marks the
--       order sent, tag|s; "unsent": it moves only an order never marked
--       sent, else the reply is "moved")
-- Returns {"ok", realised, told version}, {"exists", JSON} (from was "-"),
-- {"moved", JSON} (not at from), {"overflow"} (nothing written).
--
-- Fields of the day's orders hash: tag (the JSON), tag|v (its version),
-- tag|f ("filled avg" booked), tag|t (the version its desk was told),
-- tag|s ("1" once a send of it may have left for the broker). A final
-- order stays in the open index until its version is told.
local tag = ARGV[1]
local cur = redis.call('HGET', KEYS[1], tag)
if ARGV[4] == '-' and cur then return {'exists', cur} end
if ARGV[4] ~= '' and ARGV[4] ~= '-' and (redis.call('HGET', KEYS[1], tag .. '|v') or '') ~= ARGV[4] then
  return {'moved', cur or ''}
end
if ARGV[15] == 'unsent' and redis.call('HEXISTS', KEYS[1], tag .. '|s') == 1 then
  return {'moved', cur or ''}
end
local filled, avg = tonumber(ARGV[5]), tonumber(ARGV[6])
local pf, pavg = 0, 0
local booked = redis.call('HGET', KEYS[1], tag .. '|f')
if booked then
  local a, b = string.match(booked, '^(%S+) (%S+)$')
  pf, pavg = tonumber(a), tonumber(b)
end
local gain = 0
if filled > pf + EPS then
  local dq = filled - pf
  local dp = (filled * avg - pf * pavg) / dq
  gain = fill(KEYS[3], KEYS[4], ARGV[7], ARGV[8], dq, dp, ARGV[9], tonumber(ARGV[10]))
  if gain == nil then return {'overflow'} end
  redis.call('HSET', KEYS[1], tag .. '|f', fmt(filled) .. ' ' .. fmt(avg))
end
redis.call('HSET', KEYS[1], tag, ARGV[2], tag .. '|v', ARGV[3])
if ARGV[15] == 'send' then redis.call('HSET', KEYS[1], tag .. '|s', '1') end
if ARGV[13] == '1' then redis.call('HSET', KEYS[1], tag .. '|t', ARGV[3]) end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[14]))
local told = redis.call('HGET', KEYS[1], tag .. '|t') or ''
-- A final order leaves the open index once its desk was told of it: until
-- then the index is what remembers to tell it (OpenOrders).
if ARGV[11] == '1' and told == ARGV[3] then
  redis.call('HDEL', KEYS[2], tag)
else
  redis.call('HSET', KEYS[2], tag, ARGV[12])
end
return {'ok', fmt(gain), told}
