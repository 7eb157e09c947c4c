-- The order log's shared Lua, put before each of its scripts (orderlog.go):
-- a desk's book is a hash, field = symbol, value = "quantity avg last
-- realised". Numbers are written with %.17g, which reads back as the same
-- double; Lua's own tostring and cjson keep only 14 digits. An exponent
-- always follows a decimal point ("1.0e+22", not "1e+22") because the
-- embedded Redis's Lua (gopher-lua) cannot read the shorter form back;
-- Redis's own Lua reads both. Replies are strings for the same reason (a
-- Lua number reply is truncated to an integer). Each fill is also appended
-- to the desk's journal list as "millis side quantity price realised
-- symbol", capped to the last cap entries.
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

-- fill books one fill into a desk's book and journal and returns the P&L
-- it realised, or nil (nothing written) when a number would overflow.
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
