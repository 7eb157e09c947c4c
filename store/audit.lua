-- The audit trail's chain (audit.go): every script that writes an audit
-- entry starts with this prelude and writes it through audit_append, so
-- that whichever instance, Go call or script writes it, the entry and the
-- chain's head move in the one atomic step that records what it audits.

-- audit_link is the hash of one entry: SHA-1 (redis.sha1hex, the one hash
-- Redis's Lua has) of its previous hash and its seven fields in the order
-- of auditNames, each written as its length in bytes, ":" and itself. The
-- lengths make the encoding one-to-one: no text in a field (a desk's
-- reason, a symbol) can move bytes into the next field and keep the hash.
local function audit_link(prev, f)
  -- One concatenation, no table of parts: this runs for every entry, in
  -- every script that audits.
  local a, b, c, d = tostring(f[1]), tostring(f[2]), tostring(f[3]), tostring(f[4])
  local e, g, h = tostring(f[5]), tostring(f[6]), tostring(f[7])
  return redis.sha1hex(#prev .. ':' .. prev .. #a .. ':' .. a .. #b .. ':' .. b .. #c .. ':' .. c ..
    #d .. ':' .. d .. #e .. ':' .. e .. #g .. ':' .. g .. #h .. ':' .. h)
end

-- audit_append adds an entry to the stream (trimming entries older than
-- minid, approximately) with "p", the hash of the entry before it (the
-- head's; "" for the first entry there ever was), and makes the entry's
-- own hash the head. f is the entry's seven values in auditNames' order.
local function audit_append(stream, head, minid, f)
  local prev = redis.call('GET', head) or ''
  redis.call('XADD', stream, 'MINID', '~', minid, '*', 'a', f[1], 'd', f[2], 't', f[3],
    'r', f[4], 'b', f[5], 'm', f[6], 'x', f[7], 'p', prev)
  redis.call('SET', head, audit_link(prev, f))
end
