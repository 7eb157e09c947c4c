-- hold: saves a new request, open (CreateRequest), with its audit entry
-- and event, and counts it among its desk's open requests. It reads
-- nothing back.
--
-- KEYS
--   1 the request's hash
--   2 open requests (zset)
--   3 open requests by desk (hash)
--   4 the audit stream
--   5 the audit chain's head
--   6 the event stream
-- ARGV
--   1 the request id
--   2 the desk
--   3 its expiry (ms)
--   4 when its hash is dropped (ms)
--   5 the event's JSON
--   6 the event stream's cap
--   7 the audit stream's MINID
--   8-14 the audit entry's fields (audit.go)
--   15.. the request's other fields and values (requests.go): the
--        state (open), the desk (ARGV 2) and the expiry (ARGV 3) are
--        written here
-- Answers {} (runDecisive reads a list).

redis.call('HSET', KEYS[1], 's', 'open', 'e', ARGV[3], 'w', ARGV[2], unpack(ARGV, 15))
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
audit_append(KEYS[4], KEYS[5], ARGV[7], unpack(ARGV, 8, 14))
redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[6], '*', 'data', ARGV[5])
return {}
