-- Writes a desk's book in the one spelling of its symbols
-- (deskbot.SymbolOf): a position kept as "NSE:INFY" (booked before a bare
-- symbol meant NSE, as BROKER=paper-kite did) joins "INFY", as a fill of
-- its quantity at its average price would, its realised P&L kept; nothing
-- is written to the journal (no trade was made). After book.lua.
--
-- KEYS: 1 the desk's book (keys.go)
-- ARGV: none
-- Returns how many positions it folded.
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
