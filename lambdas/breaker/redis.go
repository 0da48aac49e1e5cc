package breaker

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyTTL expires a circuit's hash when no caller has written it for a day
// (every write refreshes it), so abandoned keys do not accumulate.
const keyTTL = 24 * time.Hour

// The scripts keep one hash per circuit (one key, so a Valkey cluster, such
// as ElastiCache Serverless, serves it from one slot):
//
//	s   state: 0 closed, 1 open, 2 half-open
//	f   consecutive failures while closed
//	ou  end of the open period, Unix ms
//	pt  token of the probe in flight
//	pu  end of the probe's lease, Unix ms
//	g   transitions to open so far
//	w   the retry budget's window (Unix ms / RetryWindow)
//	cc, cr  its calls and retries; pc, pr  the previous window's
//
// Each returns {s, f, ou, pu, g, probe, opened, closed, calls, retries,
// denied}. Times come from the caller (ARGV 1; then the key's TTL and the
// budget's window, ratio and floor), so every instance and the tests'
// virtual clocks agree with what they decide locally. budget is
// MemoryStore's memCircuit.budget.
const luaRead = `
local v = redis.call('HMGET', KEYS[1], 's', 'f', 'ou', 'pu', 'g', 'w', 'cc', 'cr', 'pc', 'pr')
local s, f, ou, pu, g = tonumber(v[1]) or 0, tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4]) or 0, tonumber(v[5]) or 0
local w, cc, cr, pc, pr = tonumber(v[6]) or 0, tonumber(v[7]) or 0, tonumber(v[8]) or 0, tonumber(v[9]) or 0, tonumber(v[10]) or 0
local now, ttl, win, ratio, least = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local calls, retries, denied = 0, 0, 0
local function budget(count, retry)
  local cw = math.floor(now / win)
  if cw > w then
    if cw == w + 1 then pc, pr = cc, cr else pc, pr = 0, 0 end
    w, cc, cr = cw, 0, 0
  end
  local rest = 1 - (now % win) / win
  calls, retries = cc + pc * rest, cr + pr * rest
  if retry and not (retries < least or retries + 1 <= ratio * (calls + 1)) then denied = 1 end
  if denied == 1 or not (count or retry) then return end
  if retry then cr, retries = cr + 1, retries + 1 end
  if count then cc, calls = cc + 1, calls + 1 end
  redis.call('HSET', KEYS[1], 'w', w, 'cc', cc, 'cr', cr, 'pc', pc, 'pr', pr)
  redis.call('PEXPIRE', KEYS[1], ttl)
end
local function reply(probe, opened, closed)
  return {s, f, ou, pu, g, probe, opened, closed, math.floor(calls), math.floor(retries), denied}
end
`

var acquireScript = redis.NewScript(luaRead + `
local token, lease, retry = ARGV[6], tonumber(ARGV[7]), ARGV[8] == '1'
local probe = 0
if (s == 1 and now >= ou) or (s == 2 and now >= pu) then
  s, pu, probe = 2, now + lease, 1
  redis.call('HSET', KEYS[1], 's', s, 'pt', token, 'pu', pu)
  redis.call('PEXPIRE', KEYS[1], ttl)
end
local allowed = s == 0 or probe == 1
budget(allowed, allowed and retry and probe == 0)
return reply(probe, 0, 0)
`)

var recordScript = redis.NewScript(luaRead + `
local failed, threshold, openms = ARGV[6] == '1', tonumber(ARGV[7]), tonumber(ARGV[8])
budget(ARGV[9] == '1', false)
local opened = 0
if s == 0 then
  if failed then
    f = redis.call('HINCRBY', KEYS[1], 'f', 1)
    if f >= threshold then
      s, ou, g, opened = 1, now + openms, g + 1, 1
      redis.call('HSET', KEYS[1], 's', s, 'ou', ou, 'g', g)
    end
    redis.call('PEXPIRE', KEYS[1], ttl)
  elseif f ~= 0 then
    f = 0
    redis.call('HSET', KEYS[1], 'f', 0)
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
end
return reply(0, opened, 0)
`)

var settleScript = redis.NewScript(luaRead + `
local token, outcome, openms = ARGV[6], ARGV[7], tonumber(ARGV[8])
budget(false, false)
if s ~= 2 or redis.call('HGET', KEYS[1], 'pt') ~= token then
  return reply(0, 0, 0)
end
local opened, closed = 0, 0
if outcome == 's' then
  s, f, pu, closed = 0, 0, 0, 1
  redis.call('HSET', KEYS[1], 's', s, 'f', f)
  redis.call('HDEL', KEYS[1], 'pt', 'pu')
elseif outcome == 'f' then
  s, ou, pu, g, opened = 1, now + openms, 0, g + 1, 1
  redis.call('HSET', KEYS[1], 's', s, 'ou', ou, 'g', g)
  redis.call('HDEL', KEYS[1], 'pt', 'pu')
else
  pu = now
  redis.call('HSET', KEYS[1], 'pu', pu)
  redis.call('HDEL', KEYS[1], 'pt')
end
redis.call('PEXPIRE', KEYS[1], ttl)
return reply(0, opened, closed)
`)

// RedisStore keeps circuits in Valkey or Redis (ElastiCache
// mercadofresco-catalogo): every operation is one Lua script, one round
// trip (EVALSHA; the first use after a server start adds one EVAL).
type RedisStore struct {
	rdb redis.Scripter
}

// NewRedisStore returns a store on rdb (a *redis.Client or
// *redis.ClusterClient). It makes no call: a store that cannot be reached
// is found out, and failed open, on the first operation.
func NewRedisStore(rdb redis.Scripter) *RedisStore { return &RedisStore{rdb: rdb} }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Acquire implements Store.
func (r *RedisStore) Acquire(ctx context.Context, key, token string, retry bool, now time.Time, p Params) (Snapshot, error) {
	return r.run(ctx, acquireScript, key, now, p, token, p.ProbeLease.Milliseconds(), flag(retry))
}

// Record implements Store.
func (r *RedisStore) Record(ctx context.Context, key string, failed, count bool, now time.Time, p Params) (Snapshot, error) {
	return r.run(ctx, recordScript, key, now, p, flag(failed), p.Threshold, p.OpenPeriod.Milliseconds(), flag(count))
}

// Settle implements Store.
func (r *RedisStore) Settle(ctx context.Context, key, token string, o Outcome, now time.Time, p Params) (Snapshot, error) {
	code := map[Outcome]string{Success: "s", Failure: "f"}[o]
	code = cmp.Or(code, "a")
	return r.run(ctx, settleScript, key, now, p, token, code, p.OpenPeriod.Milliseconds())
}

func (r *RedisStore) run(ctx context.Context, s *redis.Script, key string, now time.Time, p Params, args ...any) (Snapshot, error) {
	args = append([]any{now.UnixMilli(), keyTTL.Milliseconds(), p.RetryWindow.Milliseconds(),
		strconv.FormatFloat(p.RetryRatio, 'g', -1, 64), p.RetryFloor}, args...)
	vals, err := s.Run(ctx, r.rdb, []string{key}, args...).Int64Slice()
	if err != nil {
		return Snapshot{}, fmt.Errorf("breaker: redis %s: %w", key, err)
	}
	if len(vals) != 11 {
		return Snapshot{}, fmt.Errorf("breaker: redis %s: script returned %d values, want 11", key, len(vals))
	}
	snap := Snapshot{
		State:      State(vals[0]),
		Failures:   int(vals[1]),
		Generation: vals[4],
		Probe:      vals[5] == 1,
		Opened:     vals[6] == 1,
		Closed:     vals[7] == 1,
		Calls:      vals[8],
		Retries:    vals[9],
		Denied:     vals[10] == 1,
	}
	if vals[2] > 0 {
		snap.OpenUntil = time.UnixMilli(vals[2])
	}
	if vals[3] > 0 {
		snap.ProbeUntil = time.UnixMilli(vals[3])
	}
	if snap.State < Closed || snap.State > HalfOpen {
		return Snapshot{}, fmt.Errorf("breaker: redis %s: unknown state %d", key, vals[0])
	}
	return snap, nil
}
