-- Closes every open position of a desk at the market's price
-- (deskbot.OrderStore.FlattenBook). After book.lua.
--
-- KEYS: 1 the desk's book, 2 the desk's journal (keys.go)
-- ARGV: 1 now millis, 2 journal cap, then symbol, price pairs: the
--       market's prices (a symbol without one closes at its last price)
-- Returns symbol, side, quantity, price, realised for each closing fill,
-- by symbol.
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
