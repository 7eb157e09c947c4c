-- The audit trail's chain (audit.go): every script that writes an audit
-- entry starts with this prelude and writes it through audit_append, so
-- that whichever instance, Go call or script writes it, the entry and the
-- chain's head move in the one atomic step that records what it audits.

-- audit_link is the hash of one entry: SHA-1 (redis.sha1hex, the one hash
-- Redis's Lua has) of its previous hash and its seven fields in the order
-- of auditNames, each written as its length in bytes, ":" and itself. The
-- lengths make the encoding one-to-one: no text in a field (a desk's
-- reason, a symbol) can move bytes into the next field and keep the hash.
-- The fields are strings (ARGV, or text a script joined), passed as they
-- are: one concatenation, no table of parts, since this runs for every
-- entry, in every script that audits.
local function audit_link(prev, a, d, t, r, b, m, x)
  return redis.sha1hex(#prev .. ':' .. prev .. #a .. ':' .. a .. #d .. ':' .. d .. #t .. ':' .. t ..
    #r .. ':' .. r .. #b .. ':' .. b .. #m .. ':' .. m .. #x .. ':' .. x)
end

-- audit_append adds an entry to the stream (trimming entries older than
-- minid, approximately) with "p", the hash of the entry before it (the
-- head's; "" for the first entry there ever was), and makes the entry's
-- own hash the head. The entry is its seven values in auditNames' order,
-- passed one by one (unpack(ARGV, i, i + 6) where Go sent them), so that
-- no table is built for them.
local function audit_append(stream, head, minid, a, d, t, r, b, m, x)
  local prev = redis.call('GET', head) or ''
  redis.call('XADD', stream, 'MINID', '~', minid, '*', 'a', a, 'd', d, 't', t,
    'r', r, 'b', b, 'm', m, 'x', x, 'p', prev)
  redis.call('SET', head, audit_link(prev, a, d, t, r, b, m, x))
end
