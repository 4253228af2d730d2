/**
 * The two Lua scripts of the shared in-flight state. Scripts rather than MULTI blocks because each
 * needs Redis's own clock (TIME) in the same atomic step: replicas on different hosts never compare
 * their wall clocks, so clock skew cannot expire a live replica.
 *
 * Keys: `<prefix>replicas`, a sorted set of replica ids scored by last heartbeat (ms, Redis time),
 * and `<prefix>inflight:<replica>`, a hash worker id -> that replica's leases, with a TTL every
 * write renews. Each replica only ever writes its own hash, with absolute counts, so a lost or
 * repeated write cannot drift the sum (unlike INCR/DECR), and a Redis restart is repaired by the
 * next full write.
 */

/**
 * KEYS[1] replicas set, KEYS[2] own hash; ARGV[1] replica id, ARGV[2] TTL ms, ARGV[3] '1' for a
 * full write (heartbeat: re-register, prune dead replicas, replace the hash) or '0' for a delta;
 * then field/count pairs, count '0' deleting the field.
 */
export const WRITE_OWN_SCRIPT = `
local ttl = tonumber(ARGV[2])
if ARGV[3] == '1' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[1], now, ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('DEL', KEYS[2])
end
for i = 4, #ARGV, 2 do
  if ARGV[i + 1] == '0' then
    redis.call('HDEL', KEYS[2], ARGV[i])
  else
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  end
end
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
`;

/**
 * KEYS[1] replicas set; ARGV[1] hash key prefix, ARGV[2] own id (left out of the sums), ARGV[3]
 * TTL ms. Returns { live replicas (self included), { worker, sum of the others' counts, ... } },
 * each replica's count clamped at 0. Read-only, so it is cheap to run every few ms.
 */
export const READ_OTHERS_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[3]), '+inf')
local sums = {}
local order = {}
for _, id in ipairs(ids) do
  if id ~= ARGV[2] then
    local h = redis.call('HGETALL', ARGV[1] .. id)
    for i = 1, #h, 2 do
      local v = tonumber(h[i + 1])
      if v ~= nil and v > 0 then
        local f = h[i]
        if sums[f] == nil then
          sums[f] = 0
          order[#order + 1] = f
        end
        sums[f] = sums[f] + math.floor(v)
      end
    end
  end
end
local out = {}
for _, f in ipairs(order) do
  out[#out + 1] = f
  out[#out + 1] = tostring(sums[f])
end
return { #ids, out }
`;

/** The scripts as ioredis custom commands (EVALSHA, falling back to EVAL after a Redis restart). */
export interface ScriptCommands {
  llrWriteOwn(
    replicas: string,
    hash: string,
    replicaId: string,
    ttlMs: number,
    full: '0' | '1',
    ...pairs: string[]
  ): Promise<unknown>;
  llrReadOthers(replicas: string, hashPrefix: string, replicaId: string, ttlMs: number): Promise<unknown>;
}

export const SCRIPT_DEFINITIONS = {
  llrWriteOwn: { numberOfKeys: 2, lua: WRITE_OWN_SCRIPT },
  llrReadOthers: { numberOfKeys: 1, lua: READ_OTHERS_SCRIPT },
} as const;
