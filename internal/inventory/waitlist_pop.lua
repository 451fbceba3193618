-- waitlist_pop.lua: take the first waiting user for the units one released
-- order gave up, exactly once per released order: the lowest rank of a fair
-- sale's ranked waitlist first, else the head of the FIFO list.
--
-- KEYS[1] FIFO list of user ids   fs:{sku:<sku>}:waitlist
-- KEYS[2] set of waiting users    fs:{sku:<sku>}:waitlist:users
-- KEYS[3] offer record            fs:{sku:<sku>}:offer:<released order id>
-- KEYS[4] offers by user          fs:{sku:<sku>}:waitlist:offers (hash)
-- KEYS[5] ranked waiting users    fs:{sku:<sku>}:waitlist:ranked (zset)
-- KEYS[6] the SKU's fair sale      fs:{sku:<sku>}:sale (hash; absent for none)
-- ARGV[1] TTL in ms of the offer records
-- ARGV[2] the released order id
--
-- Returns the user id, or '' when nobody waits.
--
-- The offer record is what makes the pop idempotent: an activity retried
-- after its reply was lost finds the record and gets the same user back
-- instead of popping (and losing) the next one. "Nobody waited" is recorded
-- too, so a retry cannot turn a release into an offer after the fact. The
-- hash remembers, per user, the released order whose units they were
-- offered, so a buyer can find their offer (GET .../waitlist/me). All six
-- keys share the SKU's hash tag, so this is one atomic step.

local offered = redis.call('GET', KEYS[3])
if offered then
  return offered
end
local user
-- A paused sale sells nothing, a new order to a waiting buyer included
-- (issue 35): nobody is offered the units, which go back on sale and are
-- passed on in rank order once the sale resumes. Recorded, so a retry
-- after the resume cannot turn this release into an offer.
if redis.call('HGET', KEYS[6], 'state') == 'PAUSED' then
  redis.call('SET', KEYS[3], '', 'PX', ARGV[1])
  return ''
end
local first = redis.call('ZPOPMIN', KEYS[5])
if #first > 0 then
  user = first[1]
else
  user = redis.call('LPOP', KEYS[1])
end
if not user then
  user = ''
else
  redis.call('SREM', KEYS[2], user)
  redis.call('HSET', KEYS[4], user, ARGV[2])
  redis.call('PEXPIRE', KEYS[4], ARGV[1])
end
redis.call('SET', KEYS[3], user, 'PX', ARGV[1])
return user
