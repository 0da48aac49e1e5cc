package breaker

import (
	"cmp"
	"context"
	"fmt"
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
//
// Each returns {s, f, ou, pu, g, probe, opened, closed}. Times come from
// the caller (ARGV), so every instance and the tests' virtual clocks agree
// with what they decide locally.
const luaRead = `
local v = redis.call('HMGET', KEYS[1], 's', 'f', 'ou', 'pu', 'g')
local s, f, ou, pu, g = tonumber(v[1]) or 0, tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4]) or 0, tonumber(v[5]) or 0
`

var acquireScript = redis.NewScript(luaRead + `
local now, token, lease, ttl = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local probe = 0
if (s == 1 and now >= ou) or (s == 2 and now >= pu) then
  s, pu, probe = 2, now + lease, 1
  redis.call('HSET', KEYS[1], 's', s, 'pt', token, 'pu', pu)
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {s, f, ou, pu, g, probe, 0, 0}
`)

var recordScript = redis.NewScript(luaRead + `
local now, failed, threshold, openms, ttl = tonumber(ARGV[1]), ARGV[2] == '1', tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
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
return {s, f, ou, pu, g, 0, opened, 0}
`)

var settleScript = redis.NewScript(luaRead + `
local now, token, outcome, openms, ttl = tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
if s ~= 2 or redis.call('HGET', KEYS[1], 'pt') ~= token then
  return {s, f, ou, pu, g, 0, 0, 0}
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
return {s, f, ou, pu, g, 0, opened, closed}
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

func ms(t time.Time) int64 { return t.UnixMilli() }

// Acquire implements Store.
func (r *RedisStore) Acquire(ctx context.Context, key, token string, now time.Time, p Params) (Snapshot, error) {
	return r.run(ctx, acquireScript, key, ms(now), token, p.ProbeLease.Milliseconds(), keyTTL.Milliseconds())
}

// Record implements Store.
func (r *RedisStore) Record(ctx context.Context, key string, failed bool, now time.Time, p Params) (Snapshot, error) {
	f := "0"
	if failed {
		f = "1"
	}
	return r.run(ctx, recordScript, key, ms(now), f, p.Threshold, p.OpenPeriod.Milliseconds(), keyTTL.Milliseconds())
}

// Settle implements Store.
func (r *RedisStore) Settle(ctx context.Context, key, token string, o Outcome, now time.Time, p Params) (Snapshot, error) {
	code := map[Outcome]string{Success: "s", Failure: "f"}[o]
	code = cmp.Or(code, "a")
	return r.run(ctx, settleScript, key, ms(now), token, code, p.OpenPeriod.Milliseconds(), keyTTL.Milliseconds())
}

func (r *RedisStore) run(ctx context.Context, s *redis.Script, key string, args ...any) (Snapshot, error) {
	vals, err := s.Run(ctx, r.rdb, []string{key}, args...).Int64Slice()
	if err != nil {
		return Snapshot{}, fmt.Errorf("breaker: redis %s: %w", key, err)
	}
	if len(vals) != 8 {
		return Snapshot{}, fmt.Errorf("breaker: redis %s: script returned %d values, want 8", key, len(vals))
	}
	snap := Snapshot{
		State:      State(vals[0]),
		Failures:   int(vals[1]),
		Generation: vals[4],
		Probe:      vals[5] == 1,
		Opened:     vals[6] == 1,
		Closed:     vals[7] == 1,
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
