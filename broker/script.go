package broker

import "github.com/redis/go-redis/v9"

// Both scripts keep a desk's book as a hash: field = symbol, value =
// "quantity avg last realised". Numbers are written with %.17g, which reads
// back as the same double; Lua's own tostring and cjson keep only 14 digits.
// An exponent always follows a decimal point ("1.0e+22", not "1e+22")
// because the embedded Redis's Lua (gopher-lua) cannot read the shorter form
// back; Redis's own Lua reads both.
// Both scripts name their two keys (KEYS), a desk's book and journal,
// which share the deployment's hash tag (keys.go), so they run unchanged on
// a Redis Cluster.
// Replies are strings for the same reason (a Lua number reply is truncated
// to an integer). Each fill is also appended to the desk's journal list as
// "millis side quantity price realised symbol", capped to the last ARGV cap.
const luaCommon = `
local EPS = 1e-9
local function fmt(x)
  local s = string.format('%.17g', x)
  if string.find(s, 'e', 1, true) and not string.find(s, '.', 1, true) then
    s = (string.gsub(s, 'e', '.0e', 1))
  end
  return s
end
local function paise(x)
  if x >= 0 then return math.floor(x * 100 + 0.5) / 100 end
  return -math.floor(-x * 100 + 0.5) / 100
end
-- x - x is NaN for both infinities; gopher-lua's math.huge is not infinite.
local function finite(x) return x == x and x - x == 0 end
local function load(v)
  local a, b, c, d = string.match(v, '^(%S+) (%S+) (%S+) (%S+)$')
  return tonumber(a), tonumber(b), tonumber(c), tonumber(d)
end
-- add is a position of q at avg once dq more (signed: a sell is negative)
-- join it at price: its quantity, its average and the P&L realised on
-- what dq closed. Adding averages; reducing realises on the closed part,
-- and what crosses zero opens at price.
local function add(q, avg, dq, price)
  local nq = q + dq
  if math.abs(nq) < EPS then nq = 0 end
  local gain = 0
  if q == 0 or (q > 0) == (dq > 0) then
    if nq == 0 then avg = 0 else avg = (math.abs(q) * avg + math.abs(dq) * price) / math.abs(nq) end
  else
    local closed = math.min(math.abs(dq), math.abs(q))
    local dir = 1
    if q < 0 then dir = -1 end
    gain = paise((price - avg) * closed * dir)
    if nq == 0 then
      avg = 0
    elseif (nq > 0) ~= (q > 0) then
      avg = price
    end
  end
  return nq, avg, gain
end
local function journal(key, ms, side, qty, price, gain, sym, cap)
  redis.call('RPUSH', key, ms .. ' ' .. side .. ' ' .. fmt(qty) .. ' ' .. fmt(price) .. ' ' .. fmt(gain) .. ' ' .. sym)
  redis.call('LTRIM', key, -cap, -1)
end
`

// luaFill books one fill into a desk's book and journal: fill(book,
// journal, symbol, side, quantity, price, millis, cap) returns the P&L it
// realised, or nil (nothing written) when a number would overflow.
const luaFill = `
local function fill(bookKey, journalKey, sym, side, qty, price, ms, cap)
  local q, avg, realised = 0, 0, 0
  local cur = redis.call('HGET', bookKey, sym)
  if cur then
    local _
    q, avg, _, realised = load(cur)
  end
  local s = 1
  if side == 'sell' then s = -1 end
  local nq, gain
  nq, avg, gain = add(q, avg, s * qty, price)
  realised = realised + gain
  if not (finite(nq) and finite(avg) and finite(realised)) then return nil end
  redis.call('HSET', bookKey, sym, fmt(nq) .. ' ' .. fmt(avg) .. ' ' .. fmt(price) .. ' ' .. fmt(realised))
  journal(journalKey, ms, side, qty, price, gain, sym, cap)
  return gain
end
`

// recordScript records a desk's order as the broker reports it and books
// what it filled since it was last recorded, in one step, so the book
// never counts a fill twice nor misses one, whoever records it and however
// often. KEYS: the day's orders of the desk, the open index, book,
// journal. ARGV: tag, the order's JSON, its version ("state filled"), from
// (the version it must be at now; "" any, "-" only when absent), filled,
// average price, symbol, side, millis, journal cap, final ("1": no longer
// open), where ("day desk", the open index's value), told ("1": the
// caller tells this version itself, so it counts as told), ttl seconds,
// send ("send": this move marks the order sent, tag|s; "unsent": it moves
// only an order never marked sent, else the reply is "moved").
// A final order stays in the open index until its version is told.
// Reply: {"ok", realised, told version}, {"exists", JSON} (from was "-"),
// {"moved", JSON} (not at from), {"overflow"} (nothing written).
//
// Fields of the day's orders hash: tag (the JSON), tag|v (its version),
// tag|f ("filled avg" booked), tag|t (the version its desk was told),
// tag|s ("1" once a send of it may have left for the broker).
var recordScript = redis.NewScript(luaCommon + luaFill + `
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
-- then the index is what remembers to tell it (OrderLog.Open).
if ARGV[11] == '1' and told == ARGV[3] then
  redis.call('HDEL', KEYS[2], tag)
else
  redis.call('HSET', KEYS[2], tag, ARGV[12])
end
return {'ok', fmt(gain), told}
`)

// flattenScript closes every open position at the market's price. KEYS:
// book, journal. ARGV: now millis, journal cap, then symbol, price pairs:
// the market's prices (a symbol without one closes at its last price).
// Reply: symbol, side, quantity, price, realised for each closing fill, by
// symbol.
var flattenScript = redis.NewScript(luaCommon + `
local market = {}
for i = 3, #ARGV - 1, 2 do
  market[ARGV[i]] = tonumber(ARGV[i + 1])
end
local all = redis.call('HGETALL', KEYS[1])
-- By symbol, so the journal reads in the report's order whatever order the
-- hash keeps (insertion order while small, none once large).
local book, syms = {}, {}
for i = 1, #all, 2 do
  book[all[i]] = all[i + 1]
  table.insert(syms, all[i])
end
table.sort(syms)
local out = {}
for _, sym in ipairs(syms) do
  local q, avg, last, realised = load(book[sym])
  if market[sym] then last = market[sym] end
  if q ~= 0 then
    local side = 'sell'
    if q < 0 then side = 'buy' end
    local gain = paise((last - avg) * q)
    redis.call('HSET', KEYS[1], sym, '0 0 ' .. fmt(last) .. ' ' .. fmt(realised + gain))
    journal(KEYS[2], ARGV[1], side, math.abs(q), last, gain, sym, tonumber(ARGV[2]))
    table.insert(out, sym)
    table.insert(out, side)
    table.insert(out, fmt(math.abs(q)))
    table.insert(out, fmt(last))
    table.insert(out, fmt(gain))
  end
end
return out
`)

// foldScript writes a desk's book (KEYS[1]) in the one spelling of its
// symbols (deskbot.SymbolOf): a position kept as "NSE:INFY" (booked before
// a bare symbol meant NSE, as BROKER=paper-kite did) joins "INFY", as a
// fill of its quantity at its average price would, its realised P&L kept;
// nothing is written to the journal (no trade was made). Reply: how many
// positions it folded.
var foldScript = redis.NewScript(luaCommon + `
local n = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local old = all[i]
  if string.sub(old, 1, 4) == 'NSE:' then
    local sym = string.sub(old, 5)
    local oq, oavg, _, orealised = load(all[i + 1])
    local cur = redis.call('HGET', KEYS[1], sym)
    if not cur then
      redis.call('HSET', KEYS[1], sym, all[i + 1])
    else
      local q, avg, last, realised = load(cur)
      local gain = 0
      if oq ~= 0 then -- else only its realised P&L joins
        q, avg, gain = add(q, avg, oq, oavg)
      end
      realised = realised + orealised + gain
      redis.call('HSET', KEYS[1], sym, fmt(q) .. ' ' .. fmt(avg) .. ' ' .. fmt(last) .. ' ' .. fmt(realised))
    end
    redis.call('HDEL', KEYS[1], old)
    n = n + 1
  end
end
return n
`)
