/** The read side of `listLocks` (lock-listing.ts). */
import { defineScript } from '../nodes/lua-script.js';

/**
 * KEYS: the keys to describe; ARGV: entries of a sorted set to return, then per key how to read
 * it (`g`: a lock key or slot, value and PTTL; `f`: a fencing counter, value only; `z`: a sorted
 * set). Per key: {'string', pttl, value}, {'zset', pttl, ZCARD, member, score, ...} or {'none'}
 * (gone since the SCAN, or not of the expected type). One script instead of a command per key:
 * a page of keys costs one round trip, and no TYPE per key.
 */
export const DESCRIBE_SCRIPT = defineScript(
  'describe-keys',
  `local out = {}
local limit = tonumber(ARGV[1]) - 1
for i, key in ipairs(KEYS) do
  local how = ARGV[i + 1]
  local row = {'none'}
  if how == 'z' then
    local n = redis.pcall('ZCARD', key)
    if type(n) == 'number' and n > 0 then
      row = {'zset', -1, n}
      local range = redis.call('ZRANGE', key, 0, limit, 'WITHSCORES')
      for j = 1, #range do row[3 + j] = range[j] end
    end
  else
    local v = redis.pcall('GET', key)
    if type(v) == 'string' then row = {'string', how == 'g' and redis.call('PTTL', key) or -1, v} end
  end
  out[i] = row
end
return out`,
);
